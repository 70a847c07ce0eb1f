package auth

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestKubeconfigReachesServer writes a kubeconfig, loads it back with clientcmd, and uses
// it against a TLS server that serves the CA-signed certificate that authenticates its tokens.
func TestKubeconfigReachesServer(t *testing.T) {
	creds := newTestCredentials(t)
	certFile, keyFile, err := EnsureServingCert(t.TempDir(), creds, []string{"127.0.0.1", "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	loopback := NewLoopbackToken()
	authn, err := NewTokenAuthenticator(nil, creds.AdminToken, loopback)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(authenticated(t, authn))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	path := filepath.Join(t.TempDir(), "nested", "dir", "kubeconfig")
	if err := WriteKubeconfig(path, srv.URL, creds.CACert, creds.AdminToken, "concord-test"); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("kubeconfig has mode %o, want 600", mode)
	}
	loaded, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.CurrentContext != "concord-test" || loaded.Clusters["concord-test"].Server != srv.URL {
		t.Errorf("loaded kubeconfig has current context %q and clusters %v", loaded.CurrentContext, loaded.Clusters)
	}
	fromFile, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		cfg      *rest.Config
		wantCode int
		wantUser string
	}{
		{"kubeconfig", fromFile, http.StatusOK, AdminUser},
		{"loopback", RESTConfig(srv.URL, creds.CACert, loopback), http.StatusOK, LoopbackUser},
		{"no token", RESTConfig(srv.URL, creds.CACert, ""), http.StatusUnauthorized, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, err := rest.HTTPClientFor(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, tt.cfg.Host+"/api", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("got %d %s, want %d", resp.StatusCode, body, tt.wantCode)
			}
			if tt.wantCode == http.StatusUnauthorized {
				return
			}
			var got whoami
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got.User.Name != tt.wantUser || !got.User.IsMaster() {
				t.Errorf("got user %+v, want %s in %s", got.User, tt.wantUser, GroupMasters)
			}
		})
	}

	// Overwriting keeps mode 0600 even if someone loosened it.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteKubeconfig(path, srv.URL, creds.CACert, creds.AdminToken, ""); err != nil {
		t.Fatal(err)
	}
	if info, err = os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("rewritten kubeconfig has mode %o, want 600", mode)
	}
	if loaded, err = clientcmd.LoadFromFile(path); err != nil {
		t.Fatal(err)
	}
	if loaded.CurrentContext != DefaultContextName {
		t.Errorf("rewritten kubeconfig has current context %q, want %q", loaded.CurrentContext, DefaultContextName)
	}
}

func TestWriteKubeconfigInvalid(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(path, "", nil, "token", "x"); err == nil {
		t.Error("a kubeconfig without a server was written")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("invalid kubeconfig left a file: %v", err)
	}
}
