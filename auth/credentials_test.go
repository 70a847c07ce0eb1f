package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd/etcdtest"
)

const credentialsKey = "/registry/concord/credentials"

// newTestCredentials returns credentials with a fresh CA, without etcd.
func newTestCredentials(t *testing.T) *ClusterCredentials {
	t.Helper()
	certPEM, keyPEM, err := generateCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	return &ClusterCredentials{CACert: certPEM, CAKey: keyPEM, AdminToken: newToken()}
}

func writeCA(t *testing.T, dir string, c *ClusterCredentials) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CACertFile), c.CACert, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, CAKeyFile), c.CAKey, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestEnsureClusterCredentialsSharedByConcurrentServers(t *testing.T) {
	client := etcdtest.Start(t)
	const servers = 6
	dirs := make([]string, servers)
	got := make([]*ClusterCredentials, servers)
	errs := make([]error, servers)
	var wg sync.WaitGroup
	for i := range servers {
		dirs[i] = filepath.Join(t.TempDir(), "certs")
		wg.Go(func() {
			got[i], errs[i] = EnsureClusterCredentials(t.Context(), client, credentialsKey, dirs[i])
		})
	}
	wg.Wait()

	for i := range servers {
		if errs[i] != nil {
			t.Fatalf("server %d: %v", i, errs[i])
		}
		if !bytes.Equal(got[i].CACert, got[0].CACert) || !bytes.Equal(got[i].CAKey, got[0].CAKey) || got[i].AdminToken != got[0].AdminToken {
			t.Fatalf("server %d got credentials different from server 0", i)
		}
		if crt := readFile(t, filepath.Join(dirs[i], CACertFile)); !bytes.Equal(crt, got[0].CACert) {
			t.Errorf("server %d: %s differs from the cluster CA", i, CACertFile)
		}
		info, err := os.Stat(filepath.Join(dirs[i], CAKeyFile))
		if err != nil {
			t.Fatal(err)
		}
		if mode := info.Mode().Perm(); mode != 0o600 {
			t.Errorf("server %d: %s has mode %o, want 600", i, CAKeyFile, mode)
		}
	}
	if len(got[0].AdminToken) != 43 {
		t.Errorf("admin token has %d characters, want 43 (32 bytes base64url)", len(got[0].AdminToken))
	}

	// The record in etcd is readable JSON holding the same credentials.
	resp, err := client.Get(t.Context(), credentialsKey)
	if err != nil {
		t.Fatal(err)
	}
	var stored storedCredentials
	if err := json.Unmarshal(resp.Kvs[0].Value, &stored); err != nil {
		t.Fatalf("stored record is not JSON: %v", err)
	}
	if stored.CACert != string(got[0].CACert) || stored.AdminToken != got[0].AdminToken {
		t.Error("stored record differs from the returned credentials")
	}

	// A restart reads the same credentials and leaves the record alone.
	again, err := EnsureClusterCredentials(t.Context(), client, credentialsKey, dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if again.AdminToken != got[0].AdminToken || !bytes.Equal(again.CACert, got[0].CACert) {
		t.Error("second call returned different credentials")
	}
	resp2, err := client.Get(t.Context(), credentialsKey)
	if err != nil {
		t.Fatal(err)
	}
	if resp2.Kvs[0].ModRevision != resp.Kvs[0].ModRevision {
		t.Error("second call rewrote the etcd record")
	}

	// Serving certificates of two servers chain to the one CA, so one kubeconfig fits both.
	for _, dir := range dirs[:2] {
		certFile, _, err := EnsureServingCert(dir, got[0], []string{"127.0.0.1", "localhost"})
		if err != nil {
			t.Fatal(err)
		}
		verifyServingCert(t, certFile, got[0].CACert, "127.0.0.1", "localhost")
	}
}

func TestEnsureClusterCredentialsUsesCertDirCA(t *testing.T) {
	client := etcdtest.Start(t)
	own := newTestCredentials(t)
	dir := t.TempDir()
	writeCA(t, dir, own)

	got, err := EnsureClusterCredentials(t.Context(), client, credentialsKey, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.CACert, own.CACert) || !bytes.Equal(got.CAKey, own.CAKey) {
		t.Error("the CA of the certificate directory was not used")
	}
	if got.AdminToken == "" || got.AdminToken == own.AdminToken {
		t.Error("want a newly generated admin token")
	}

	// A server whose directory holds another CA refuses to start and keeps its files.
	other := newTestCredentials(t)
	otherDir := t.TempDir()
	writeCA(t, otherDir, other)
	_, err = EnsureClusterCredentials(t.Context(), client, credentialsKey, otherDir)
	if !errors.Is(err, ErrCAMismatch) {
		t.Fatalf("got error %v, want ErrCAMismatch", err)
	}
	if !bytes.Equal(readFile(t, filepath.Join(otherDir, CACertFile)), other.CACert) {
		t.Error("a mismatching ca.crt was overwritten")
	}
}

func TestEnsureClusterCredentialsErrors(t *testing.T) {
	client := etcdtest.Start(t)
	creds := newTestCredentials(t)

	t.Run("certificate without key", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, CACertFile), creds.CACert, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := EnsureClusterCredentials(t.Context(), client, "/half", dir)
		if !errors.Is(err, ErrInvalidCredentials) {
			t.Fatalf("got %v, want ErrInvalidCredentials", err)
		}
	})
	t.Run("key of another CA", func(t *testing.T) {
		dir := t.TempDir()
		writeCA(t, dir, &ClusterCredentials{CACert: creds.CACert, CAKey: newTestCredentials(t).CAKey})
		_, err := EnsureClusterCredentials(t.Context(), client, "/mismatched-key", dir)
		if !errors.Is(err, ErrInvalidCredentials) {
			t.Fatalf("got %v, want ErrInvalidCredentials", err)
		}
	})
	t.Run("corrupt record", func(t *testing.T) {
		if _, err := client.Put(t.Context(), "/corrupt", `{"caCert":"nope","caKey":"nope","adminToken":"x"}`); err != nil {
			t.Fatal(err)
		}
		_, err := EnsureClusterCredentials(t.Context(), client, "/corrupt", t.TempDir())
		if !errors.Is(err, ErrInvalidCredentials) {
			t.Fatalf("got %v, want ErrInvalidCredentials", err)
		}
	})
	t.Run("record without token", func(t *testing.T) {
		value, _ := json.Marshal(storedCredentials{CACert: string(creds.CACert), CAKey: string(creds.CAKey)})
		if _, err := client.Put(t.Context(), "/no-token", string(value)); err != nil {
			t.Fatal(err)
		}
		_, err := EnsureClusterCredentials(t.Context(), client, "/no-token", "")
		if !errors.Is(err, ErrInvalidCredentials) {
			t.Fatalf("got %v, want ErrInvalidCredentials", err)
		}
	})
	t.Run("no certificate directory", func(t *testing.T) {
		got, err := EnsureClusterCredentials(t.Context(), client, "/no-dir", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := got.parseCA(); err != nil {
			t.Fatal(err)
		}
	})
}

// Credentials stored by a release without a service account key and a front-proxy CA
// get them, the same for every server that starts at once.
func TestEnsureClusterCredentialsAddsServiceAccountKey(t *testing.T) {
	client := etcdtest.Start(t)
	const key = "/registry/concord/credentials"
	caCert, caKey, err := generateCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	old, err := json.Marshal(map[string]string{"caCert": string(caCert), "caKey": string(caKey), "adminToken": "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(t.Context(), key, string(old)); err != nil {
		t.Fatal(err)
	}
	keys, proxyCAs := make([][]byte, 4), make([][]byte, 4)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			creds, err := EnsureClusterCredentials(t.Context(), client, key, "")
			if err != nil {
				t.Error(err)
				return
			}
			keys[i], proxyCAs[i] = creds.ServiceAccountKey, creds.FrontProxyCACert
		}()
	}
	wg.Wait()
	for i, k := range keys {
		if len(k) == 0 || !bytes.Equal(k, keys[0]) {
			t.Fatalf("server %d got service account key %q, want the same non-empty key as server 0", i, k)
		}
		if len(proxyCAs[i]) == 0 || !bytes.Equal(proxyCAs[i], proxyCAs[0]) || bytes.Equal(proxyCAs[i], caCert) {
			t.Fatalf("server %d got front-proxy CA %q, want the same as server 0's, not the cluster CA", i, proxyCAs[i])
		}
	}
	if _, _, err := NewFrontProxyClientCertificate(&ClusterCredentials{FrontProxyCACert: proxyCAs[0], FrontProxyCAKey: nil}, time.Hour); err == nil {
		t.Error("a front-proxy client certificate signed without the CA key")
	}
	creds, err := EnsureClusterCredentials(t.Context(), client, key, "")
	if err != nil || !bytes.Equal(creds.ServiceAccountKey, keys[0]) || string(creds.CACert) != string(caCert) || creds.AdminToken != "t" {
		t.Errorf("after the key was added: %v; the CA and admin token must stay", err)
	}
}
