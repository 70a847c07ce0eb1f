package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

func rewrite(t *testing.T, cfg *rest.Config, path string) (int, *wire.RewriteResult) {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Post(cfg.Host+path, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r wire.RewriteResult
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, &r
}

// The migration fast path over HTTP: pages, counts, and only writers may call it.
func TestRewriteEndpoint(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	s := c.Servers[0]
	cms := s.Clientset(t).CoreV1().ConfigMaps("default")
	for i := 0; i < 7; i++ {
		if _, err := cms.Create(t.Context(), configMap(fmt.Sprint("rw-", i), nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	scanned, token := 0, ""
	for {
		code, r := rewrite(t, s.Config(), "/concord/v1/rewrite/core/configmaps?limit=3&continue="+token)
		if code != 200 {
			t.Fatalf("rewrite: %d", code)
		}
		// Objects written by this very server are current: nothing to rewrite.
		if r.Rewritten != 0 || len(r.Failed) != 0 {
			t.Fatalf("page %+v", r)
		}
		scanned += r.Scanned
		if token = r.Continue; token == "" {
			break
		}
	}
	// The 7, and the servers' own in kube-system.
	system, err := s.Clientset(t).CoreV1().ConfigMaps(metav1.NamespaceSystem).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := 7 + len(system.Items); scanned != want {
		t.Fatalf("scanned %d, want %d", scanned, want)
	}
	if code, _ := rewrite(t, s.Config(), "/concord/v1/rewrite/core/nothings"); code != 404 {
		t.Fatalf("unknown resource: %d", code)
	}
	reader := rest.AnonymousClientConfig(s.Config())
	if code, _ := rewrite(t, reader, "/concord/v1/rewrite/core/configmaps"); code != 401 {
		t.Fatalf("anonymous: %d", code)
	}
}
