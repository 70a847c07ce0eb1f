package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/migration/migrator"
	"github.com/concordproject/concord/wire"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

var storageVersionsGVR = schema.GroupVersionResource{Group: "internal.apiserver.k8s.io", Version: "v1alpha1", Resource: "storageversions"}

// A rewrite guarded by the resource's StorageVersion, as the migration controller asks
// for, goes to etcd in transactions as full as etcd takes under the guard (127 writes):
// 300 widgets in one page share 3 revisions.
func TestGuardedRewriteFillsTransactions(t *testing.T) {
	t.Parallel()
	c := startMigrationCluster(t, 1)
	s := c.Servers[0]
	e := newMigrationEnv(t, c, "guarded.batches.example.com", "v1")
	const n = 300
	e.seed("w", "v1", n, 1)
	e.flip("v2")
	sv, err := s.Dynamic(t).Resource(storageVersionsGVR).Get(t.Context(), wire.StorageVersionName(e.gr), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrator.New(s.Config(), migrator.Options{Mode: migrator.ModeServer, PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	res := migrator.Resource{GroupVersionResource: e.gvr("v2"), Namespaced: true, StorageVersion: sv.GetResourceVersion()}
	cp, err := m.Migrate(t.Context(), res, migrator.Checkpoint{}, nil)
	if err != nil || cp.Migrated != n {
		t.Fatalf("migrated %+v, %v; want all %d", cp.Counts, err, n)
	}
	resp, err := c.EtcdClient.Get(t.Context(), "/registry/"+e.gr.Group+"/"+e.gr.Resource+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	revisions := map[int64]int{}
	for _, kv := range resp.Kvs {
		revisions[kv.ModRevision]++
	}
	if len(resp.Kvs) != n || len(revisions) != 3 {
		t.Fatalf("%d widgets rewritten at %d revisions (%v), want %d at 3", len(resp.Kvs), len(revisions), revisions, n)
	}
}
