package auth

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/concordproject/concord/compatibility"
	"k8s.io/client-go/rest"
)

// The clients of a loaded kubeconfig are Concord's of the build's release: they send
// its major.minor in the client version header and name it in their User-Agent.
func TestLoadKubeconfigIdentifiesTheRelease(t *testing.T) {
	type seen struct{ header, userAgent string }
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Get(compatibility.ClientVersionHeader), r.UserAgent()}
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(path, srv.URL, nil, "token", ""); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadKubeconfig(path)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/api", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()

	release, err := compatibility.BuildRelease()
	if err != nil {
		t.Fatal(err)
	}
	s := <-got
	if s.header != release.String() || !strings.Contains(s.userAgent, "/v"+release.String()+".0 (") {
		t.Errorf("header %q, User-Agent %q; want %s and a User-Agent naming v%s.0", s.header, s.userAgent, release, release)
	}
}
