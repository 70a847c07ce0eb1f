package integration

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/migration/migrator"
	"github.com/concordproject/concord/wire"
	clientv3 "go.etcd.io/etcd/client/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
)

// requestGate lets the first requests its match selects through, holds the next ones
// until released (or their request is cancelled), and counts those it let through.
type requestGate struct {
	match func(*http.Request) bool

	mu     sync.Mutex
	passed int
	limit  int
	open   chan struct{}
	held   chan struct{} // closed once a request is held
}

func newRequestGate(limit int, match func(*http.Request) bool) *requestGate {
	return &requestGate{match: match, limit: limit, open: make(chan struct{}), held: make(chan struct{})}
}

func (g *requestGate) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if g.match(r) {
				if err := g.wait(r.Context()); err != nil {
					return nil, err
				}
			}
			return rt.RoundTrip(r)
		})
	})
	return cfg
}

func (g *requestGate) wait(ctx context.Context) error {
	g.mu.Lock()
	if g.passed < g.limit {
		g.passed++
		g.mu.Unlock()
		return nil
	}
	select {
	case <-g.held:
	default:
		close(g.held)
	}
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *requestGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.limit = int(^uint(0) >> 1)
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// A migration holds its rewrites to the StorageVersion object it was started for.
// Here the widgets' StorageVersion changes mid-way (a server's entry is written into
// it, or written and withdrawn) while the migration to v2 waits between two pages,
// and no trigger runs: only the migrator and the controller decide.
//
//   - Server path: the next page's rewrites are made in etcd transactions that
//     compare the StorageVersion key's revision; they fail, nothing is written.
//   - Client path: the migrator reads the StorageVersion before each page's writes and
//     stops before writing the page.
//
// What follows depends on the object's history since the migration started:
//
//   - a server of another release joined (v1: the servers disagree): the migration
//     ends Failed, StorageVersionsDisagree, its progress counting the pages done; etcd
//     read directly shows no widget written at or after the revision of the change,
//     and the widgets of the later pages still in v1;
//   - a server of the same release joined (v2: every revision agreed): the controller
//     moves the migration's guard to the new resourceVersion and the migration goes
//     on from its checkpoint to Succeeded, every widget in v2;
//   - a server of another release joined and left again (they agree now, but did not
//     in between): the migration ends Failed, StorageVersionChanged, as in the first
//     case;
//   - a server of the same release joined before the first server-side page was
//     written: the page is refused whole, the guard moves, and the migration goes on
//     from the start (a checkpoint that never left the start is not a finished one).
func TestStorageMigrationHeldToStorageVersion(t *testing.T) {
	t.Parallel()
	c := startMigrationCluster(t, 1)
	s := c.Servers[0]
	const n, pageSize, pages = 200, 20, 3
	isRewrite := func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, wire.RewritePath)
	}
	isStorageVersionRead := func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/storageversions/")
	}
	for _, step := range []struct {
		name string
		mode migrator.Mode
		gate func(*http.Request) bool
		// before is how many gated requests pass before the one held.
		before int
		// changes are the fake servers' entries written, one change after the other
		// ("" withdraws one); reason the migration's end, "" for Succeeded.
		changes []map[string]string
		reason  string
	}{
		{"server-disagree", migrator.ModeServer, isRewrite, pages, []map[string]string{{"fake-a": "v1"}}, migrationapi.ReasonStorageVersionsDisagree},
		{"client-agree", migrator.ModeClient, isStorageVersionRead, pages, []map[string]string{{"fake-b": "v2"}}, ""},
		{"server-agree", migrator.ModeServer, isRewrite, pages, []map[string]string{{"fake-c": "v2"}, {"fake-c": ""}}, ""},
		{"client-disagreed", migrator.ModeClient, isStorageVersionRead, pages, []map[string]string{{"fake-d": "v1"}, {"fake-d": ""}}, migrationapi.ReasonStorageVersionChanged},
		{"server-agree-first", migrator.ModeServer, isRewrite, 0, []map[string]string{{"fake-e": "v2"}}, ""},
	} {
		e := newMigrationEnv(t, c, fmt.Sprintf("guard-%s.example.com", step.name), "v1")
		e.seed("w", "v1", n, 1)
		e.flip("v2")
		gate := newRequestGate(step.before, step.gate)
		cfg := fastConfig(gate.wrap(s.Config()), nil)
		cfg.DisableTrigger = true
		cfg.Migrator = migrator.Options{Mode: step.mode, PageSize: pageSize, Concurrency: 2}
		stop := runControllers(t, cfg)
		name := "guard-" + step.name
		createGuardedMigration(t, e, name)
		waitHeld(t, gate, name)

		for _, change := range step.changes {
			fakeServers(t, s, e.gr, change)
		}
		changed := storageVersionRevision(t, e)
		gate.release()
		if step.reason == "" {
			m := waitNamedMigration(t, e, name, phase(migrationapi.ConditionSucceeded))
			stop()
			checkCarried(t, e, m, changed, n)
			continue
		}
		m := waitNamedMigration(t, e, name, phase(migrationapi.ConditionFailed))
		stop()
		cond := findMigrationCondition(m, migrationapi.ConditionFailed)
		if cond.Reason != step.reason || !strings.Contains(cond.Message, "StorageVersion") {
			t.Errorf("%s: Failed %s %q, want %s", name, cond.Reason, cond.Message, step.reason)
		}
		if p := m.Status.Progress; p == nil || p.Migrated != int64(step.before*pageSize) || p.Path != string(step.mode) {
			t.Errorf("%s: progress %+v, want %d migrated on the %s path", name, p, step.before*pageSize, step.mode)
		}
		newest, encodings := widgetRevisions(t, e)
		if newest >= changed {
			t.Errorf("%s: a widget was written at revision %d, at or after the StorageVersion changed (%d)", name, newest, changed)
		}
		if want := step.before * pageSize; encodings[e.gr.Group+"/v2"] != want || encodings[e.gr.Group+"/v1"] != n-want {
			t.Errorf("%s: etcd holds %v, want %d in v2 and the rest in v1", name, encodings, want)
		}
		t.Logf("%s: %s; StorageVersion changed at revision %d, last widget write at %d", name, cond.Message, changed, newest)
	}
}

// checkCarried checks migration m of e's n widgets, which succeeded although the
// StorageVersion object moved to revision changed under it: its guard was moved to
// that revision, it migrated every widget, and etcd holds them all in v2, the later
// pages written after the change.
func checkCarried(t *testing.T, e *migrationEnv, m *migrationapi.StorageVersionMigration, changed int64, n int) {
	t.Helper()
	if got := m.Annotations[migrationapi.AnnotationStorageVersionResourceVersion]; got != strconv.FormatInt(changed, 10) {
		t.Errorf("%s: guard at resourceVersion %s, want it moved to %d", m.Name, got, changed)
	}
	if p := m.Status.Progress; p == nil || p.Migrated != int64(n) {
		t.Errorf("%s: progress %+v, want all %d migrated", m.Name, p, n)
	}
	newest, encodings := widgetRevisions(t, e)
	if newest <= changed || encodings[e.gr.Group+"/v2"] != n || len(encodings) != 1 {
		t.Errorf("%s: etcd holds %v, newest widget at revision %d; want all %d in v2, some written after revision %d", m.Name, encodings, newest, n, changed)
	}
	t.Logf("%s: guard moved to revision %d; last widget write at %d", m.Name, changed, newest)
}

// waitHeld waits until gate holds a request.
func waitHeld(t *testing.T, gate *requestGate, what string) {
	t.Helper()
	select {
	case <-gate.held:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: no request held after 30s", what)
	}
}

// createGuardedMigration creates the migration name of e's widgets as the trigger
// would, recording the StorageVersion's resourceVersion and the hash of v2.
func createGuardedMigration(t *testing.T, e *migrationEnv, name string) {
	t.Helper()
	sv := strconv.FormatInt(storageVersionRevision(t, e), 10)
	m := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": migrationapi.StorageVersionMigrations.GroupVersion().String(), "kind": "StorageVersionMigration",
		"metadata": map[string]interface{}{"name": name, "annotations": map[string]interface{}{
			migrationapi.AnnotationStorageVersionResourceVersion: sv,
			migrationapi.AnnotationStorageVersionHash:            e.hash("v2"),
		}},
		"spec": map[string]interface{}{"resource": map[string]interface{}{"group": e.gr.Group, "resource": e.gr.Resource}},
	}}
	if _, err := e.c.Servers[0].Dynamic(t).Resource(migrationapi.StorageVersionMigrations).Create(t.Context(), m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// storageVersionRevision returns the resourceVersion of the StorageVersion of e's
// widgets.
func storageVersionRevision(t *testing.T, e *migrationEnv) int64 {
	t.Helper()
	u, err := e.c.Servers[0].Dynamic(t).Resource(migrationapi.StorageVersions).Get(t.Context(), wire.StorageVersionName(e.gr), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return rvNumber(t, u.GetResourceVersion())
}

// waitNamedMigration waits until migration name satisfies cond, and returns it.
func waitNamedMigration(t *testing.T, e *migrationEnv, name string, cond func(*migrationapi.StorageVersionMigration) bool) *migrationapi.StorageVersionMigration {
	t.Helper()
	var got *migrationapi.StorageVersionMigration
	waitMigrating(t, e.c.Servers[0].Dynamic(t), name, func() (bool, error) {
		u, err := e.c.Servers[0].Dynamic(t).Resource(migrationapi.StorageVersionMigrations).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if got, err = migrationapi.MigrationFrom(u); err != nil {
			return false, err
		}
		return cond(got), nil
	})
	return got
}

// widgetRevisions reads e's widgets from etcd: the newest mod revision among them,
// and how many are encoded in each apiVersion.
func widgetRevisions(t *testing.T, e *migrationEnv) (int64, map[string]int) {
	t.Helper()
	resp, err := e.c.EtcdClient.Get(t.Context(), "/registry/"+e.gr.Group+"/"+e.gr.Resource+"/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	var newest int64
	for _, kv := range resp.Kvs {
		newest = max(newest, kv.ModRevision)
	}
	return newest, e.encodings()
}
