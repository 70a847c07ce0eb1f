package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/migration"
	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/migration/controller"
	"github.com/concordproject/concord/migration/migrator"
	"github.com/concordproject/concord/migration/trigger"
	"github.com/concordproject/concord/wire"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	clientv3 "go.etcd.io/etcd/client/v3"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// migrationLogVerbosity is the verbosity of the controllers' logs in these tests.
const migrationLogVerbosity = 4

// widgetCRD defines widgets.<group> in versions (default v1, v2) of the same shape
// (None conversion), stored in storage; every version after the first refuses a
// negative spec.size, and its transition rule refuses to keep one on update, so that
// objects written in the first with one cannot be written back in a later one (a
// permanent failure for a migration: the schema's minimum alone would ratchet, as a
// rewrite leaves the value unchanged, but transition rules never ratchet).
func widgetCRD(group, storage string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	if len(versions) == 0 {
		versions = []string{"v1", "v2"}
	}
	props := func(minimum *float64) *apiextensionsv1.CustomResourceValidation {
		spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"size": {Type: "integer", Minimum: minimum},
			"note": {Type: "string"},
		}}
		if minimum != nil {
			spec.XValidations = apiextensionsv1.ValidationRules{{
				Rule:    "self.size >= 0 || !has(oldSelf.size) || oldSelf.size >= 0",
				Message: "spec.size must not stay negative",
			}}
		}
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type:       "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec},
		}}
	}
	zero := 0.0
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
		},
	}
	for i, v := range versions {
		var minimum *float64
		if i > 0 {
			minimum = &zero
		}
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: storage == v, Schema: props(minimum)})
	}
	return crd
}

// startMigrationCluster starts n servers without their in-process migration
// controllers, for tests that run the controllers themselves.
func startMigrationCluster(t *testing.T, n int, opts ...harness.Option) *harness.Cluster {
	t.Helper()
	off := harness.WithServerOptions(func(_ int, o *controlplane.Options) { o.DisableStorageMigration = true })
	return harness.Start(t, n, append([]harness.Option{off}, opts...)...)
}

// migrationEnv is one cluster with a widget definition.
type migrationEnv struct {
	t   *testing.T
	c   *harness.Cluster
	crd *apiextensionsv1.CustomResourceDefinition
	gr  schema.GroupResource
}

func newMigrationEnv(t *testing.T, c *harness.Cluster, group, storage string, versions ...string) *migrationEnv {
	t.Helper()
	crd := widgetCRD(group, storage, versions...)
	if _, err := crdClient(t, c.Servers[0]).ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e := &migrationEnv{t: t, c: c, crd: crd, gr: schema.GroupResource{Group: group, Resource: "widgets"}}
	e.waitStorage(storage)
	return e
}

func (e *migrationEnv) gvr(v string) schema.GroupVersionResource { return e.gr.WithVersion(v) }

// hash is the storage version hash of version v.
func (e *migrationEnv) hash(v string) string {
	return wire.StorageVersionHash(e.gr.Group, v, "Widget")
}

// waitStorage waits until every running server encodes widgets in v.
func (e *migrationEnv) waitStorage(v string) {
	e.t.Helper()
	for _, s := range e.c.Servers {
		if s.Instance == nil {
			continue
		}
		waitFor(e.t, fmt.Sprintf("server %d to store %s in %s", s.Index, e.gr, v), func() (bool, error) {
			res := s.Registry.Get(e.gr)
			return res != nil && res.StorageVersion == v, nil
		})
	}
}

// flip makes v the storage version and waits until every server uses it.
func (e *migrationEnv) flip(v string) {
	e.t.Helper()
	crds := crdClient(e.t, e.c.Servers[0]).ApiextensionsV1().CustomResourceDefinitions()
	err := retryConflict(func() error {
		cur, err := crds.Get(e.t.Context(), e.crd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for i := range cur.Spec.Versions {
			cur.Spec.Versions[i].Storage = cur.Spec.Versions[i].Name == v
		}
		_, err = crds.Update(e.t.Context(), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.waitStorage(v)
}

func retryConflict(f func() error) error {
	for {
		if err := f(); !apierrors.IsConflict(err) {
			return err
		}
	}
}

// seed creates n widgets named <prefix>-<i> in namespace default, in version v, with
// spec.size = size, 8 at a time.
func (e *migrationEnv) seed(prefix, v string, n int, size int64) {
	e.t.Helper()
	dyn := e.c.Servers[0].Dynamic(e.t).Resource(e.gvr(v)).Namespace("default")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	var next atomic.Int64
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				o := &unstructured.Unstructured{Object: map[string]interface{}{
					"apiVersion": e.gvr(v).GroupVersion().String(), "kind": "Widget",
					"metadata": map[string]interface{}{"name": fmt.Sprintf("%s-%04d", prefix, i)},
					"spec":     map[string]interface{}{"size": size},
				}}
				if _, err := dyn.Create(e.t.Context(), o, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.t.Fatalf("seeding %s: %v", e.gr, err)
	}
}

// encodings reads etcd directly and counts the widgets by the apiVersion they are
// encoded in.
func (e *migrationEnv) encodings() map[string]int {
	e.t.Helper()
	return etcdEncodings(e.t, e.c.EtcdClient, "/registry/"+e.gr.Group+"/"+e.gr.Resource+"/")
}

func etcdEncodings(t *testing.T, cli *clientv3.Client, prefix string) map[string]int {
	t.Helper()
	resp, err := cli.Get(t.Context(), prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, kv := range resp.Kvs {
		var head struct{ APIVersion string }
		if err := json.Unmarshal(kv.Value, &head); err != nil {
			t.Fatalf("%s: %v", kv.Key, err)
		}
		out[head.APIVersion]++
	}
	return out
}

// runControllers runs migration.Run until the returned function is called (or the
// test ends), and checks that it returned nil.
func runControllers(t *testing.T, cfg migration.Config) (stop func()) {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(migrationLogVerbosity)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(t.Context()), logger))
	done := make(chan error, 1)
	go func() { done <- migration.Run(ctx, cfg) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("migration.Run: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("migration.Run did not return within 30s of its context's end")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// only makes cfg's controllers leave every resource server s serves alone but gr:
// gr's migrations then neither wait behind the controllers' first sweep of the
// built-in resources nor share a write gate with it.
func only(cfg migration.Config, s *harness.Server, gr schema.GroupResource) migration.Config {
	for _, res := range s.Registry.Resources() {
		if res.GroupResource() != gr {
			cfg.IgnoredResources = append(cfg.IgnoredResources, res.GroupResource())
		}
	}
	return cfg
}

// fastConfig are controller settings for tests: short polls, quick elections.
func fastConfig(rc *rest.Config, reg prometheus.Registerer) migration.Config {
	return migration.Config{
		RESTConfig:       rc,
		Metrics:          reg,
		PollInterval:     200 * time.Millisecond,
		StalenessWindow:  time.Minute,
		RetryFailedAfter: time.Minute,
		// At their start the controllers migrate every resource they have not seen
		// (67 built-in ones, nearly all empty) before or beside the test's own: eight
		// at once keep that sweep from holding a test's migration back for long.
		Migrations: 8,
		Migrator:   migrator.Options{PageSize: 50, InitialBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond},
		// A stopped manager releases its lease, and the next one takes it within a
		// retry period; a renewal may take seconds when two suites share two cores,
		// and a lost lease restarts the controllers from empty caches, so the renew
		// deadline is not short.
		LeaderElection: migration.LeaderElection{
			LeaseDuration: 8 * time.Second, RenewDeadline: 6 * time.Second, RetryPeriod: 200 * time.Millisecond,
		},
	}
}

// getState returns the StorageState of gr, nil if there is none.
func getState(t *testing.T, dyn dynamic.Interface, gr schema.GroupResource) *migrationapi.StorageState {
	t.Helper()
	u, err := dyn.Resource(migrationapi.StorageStates).Get(t.Context(), migrationapi.StorageStateName(gr), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	s := &migrationapi.StorageState{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// waitPersisted waits until the StorageState of gr has persisted == want and current
// == want's last entry. It fails when no migration of the cluster has moved for 20 s:
// gr's may wait behind the controllers' first sweep of every other resource.
func waitPersisted(t *testing.T, dyn dynamic.Interface, gr schema.GroupResource, current string, want ...string) {
	t.Helper()
	waitUnstalled(t, fmt.Sprintf("storage state of %s to persist %v, current %s", gr, want, current), func() (bool, string, error) {
		last := getState(t, dyn, gr)
		if last != nil && slices.Equal(last.Status.PersistedStorageVersionHashes, want) && last.Status.CurrentStorageVersionHash == current {
			return true, "", nil
		}
		mark, err := migrationsMark(t.Context(), dyn)
		if last != nil {
			mark = fmt.Sprintf("state %+v; %s", last.Status, mark)
		}
		return false, mark, err
	})
}

// migrationsMark summarises what the migration controllers have done so far: which of
// their definitions are installed, who holds their election, the StorageStates the
// trigger keeps, and every migration's phase and counts. Each step of their start moves
// it, and so does every page a migration reports, skipped objects included (a page of
// objects already current is progress too).
func migrationsMark(ctx context.Context, dyn dynamic.Interface) (string, error) {
	var b strings.Builder
	for _, name := range []string{migrationapi.StorageStateCRD().Name, migrationapi.StorageVersionMigrationCRD().Name} {
		_, err := dyn.Resource(migrationapi.CustomResourceDefinitions).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			fmt.Fprintf(&b, "%s ", name)
		case !apierrors.IsNotFound(err):
			return "", err
		}
	}
	leases := schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	lease, err := dyn.Resource(leases).Namespace(metav1.NamespaceSystem).Get(ctx, "concord-storage-migration", metav1.GetOptions{})
	switch {
	case err == nil:
		holder, _, _ := unstructured.NestedString(lease.Object, "spec", "holderIdentity")
		fmt.Fprintf(&b, "leader=%s ", holder)
	case !apierrors.IsNotFound(err):
		return "", err
	}
	states, err := dyn.Resource(migrationapi.StorageStates).List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return "", err
	}
	if states != nil {
		fmt.Fprintf(&b, "states=%d ", len(states.Items))
	}
	list, err := dyn.Resource(migrationapi.StorageVersionMigrations).List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return b.String(), nil
		}
		return "", err
	}
	for _, u := range list.Items {
		m := &migrationapi.StorageVersionMigration{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, m); err != nil {
			return "", err
		}
		p := m.Status.Progress
		if p == nil {
			p = &migrationapi.Progress{}
		}
		fmt.Fprintf(&b, "%s=%s/%d/%d/%d ", m.Name, m.Phase(), p.Migrated, p.Skipped, p.Failed)
	}
	return b.String(), nil
}

// waitMigrating waits until cond holds, for as long as some migration moves: it fails
// when cond errs, or when no migration's phase or progress has changed for the stall
// window of waitUnstalled.
func waitMigrating(t testing.TB, dyn dynamic.Interface, what string, cond func() (bool, error)) {
	t.Helper()
	waitUnstalled(t, what, func() (bool, string, error) {
		done, err := cond()
		if err != nil || done {
			return done, "", err
		}
		mark, err := migrationsMark(t.Context(), dyn)
		return false, mark, err
	})
}

// migrationsOf lists the migrations of gr, oldest first.
func migrationsOf(t *testing.T, dyn dynamic.Interface, gr schema.GroupResource) []*migrationapi.StorageVersionMigration {
	t.Helper()
	list, err := dyn.Resource(migrationapi.StorageVersionMigrations).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*migrationapi.StorageVersionMigration
	for _, u := range list.Items {
		m := &migrationapi.StorageVersionMigration{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, m); err != nil {
			t.Fatal(err)
		}
		if m.Spec.Resource.Group == gr.Group && m.Spec.Resource.Resource == gr.Resource {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b *migrationapi.StorageVersionMigration) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// The whole story on one server, the trigger polling discovery: objects written in
// v1, the storage version flipped to v2, one migration started by itself that rewrites
// every object (etcd read directly shows v2 everywhere), the StorageState's
// persisted list reduced to v2, the definition's storedVersions trimmed, the metrics
// and `concord migrations` telling what happened.
func TestStorageMigrationEndToEnd(t *testing.T) {
	t.Parallel()
	c := startMigrationCluster(t, 1)
	s := c.Servers[0]
	e := newMigrationEnv(t, c, "e2e.example.com", "v1")
	const n = 240
	e.seed("w", "v1", n, 1)
	e.flip("v2")
	if got := e.encodings(); got["e2e.example.com/v1"] != n {
		t.Fatalf("before the migration etcd holds %v, want %d in v1", got, n)
	}

	reg := prometheus.NewRegistry()
	runControllers(t, fastConfig(s.Config(), reg))
	dyn := s.Dynamic(t)
	waitPersisted(t, dyn, e.gr, e.hash("v2"), e.hash("v2"))

	if got := e.encodings(); got["e2e.example.com/v2"] != n || len(got) != 1 {
		t.Errorf("after the migration etcd holds %v, want all %d in v2", got, n)
	}
	migs := migrationsOf(t, dyn, e.gr)
	if len(migs) != 1 {
		t.Fatalf("%d migrations of %s, want 1", len(migs), e.gr)
	}
	m := migs[0]
	p := m.Status.Progress
	if m.Phase() != migrationapi.ConditionSucceeded || p == nil || p.Migrated != n || p.Skipped != 0 || p.Failed != 0 || p.Total == nil || *p.Total != n {
		t.Errorf("migration %s: phase %s, progress %+v; want Succeeded with %d migrated of %d", m.Name, m.Phase(), p, n, n)
	}
	if p != nil && (p.Path != migrationapi.PathServer || p.StorageVersionHash != e.hash("v2") || p.Continue != "") {
		t.Errorf("progress %+v: want the server path, hash of v2, no continue token", p)
	}
	if m.Status.ResourceVersion == "" {
		t.Errorf("status.resourceVersion not set")
	}
	crd, err := crdClient(t, s).ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), e.crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(crd.Status.StoredVersions, []string{"v2"}) {
		t.Errorf("storedVersions = %v, want [v2]", crd.Status.StoredVersions)
	}
	label := migrationapi.StorageStateName(e.gr)
	if got := metricValue(t, reg, "concord_storage_migration_objects_migrated_total", label); got != n {
		t.Errorf("objects migrated metric = %v, want %d", got, n)
	}
	if got := metricValue(t, reg, "concord_storage_migration_objects_remaining", label); got != 0 {
		t.Errorf("objects remaining metric = %v, want 0", got)
	}

	// Every other resource got a state too, created Unknown and migrated.
	waitMigrating(t, dyn, "a storage state for configmaps", func() (bool, error) {
		return getState(t, dyn, schema.GroupResource{Resource: "configmaps"}) != nil, nil
	})

	// The controller told what it did in events.k8s.io/v1 Events regarding the
	// migration: storedVersions trimmed, the migration succeeded.
	waitFor(t, "the migration's Events", func() (bool, error) {
		evs, err := s.Clientset(t).EventsV1().Events("default").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var reasons []string
		for _, ev := range evs.Items {
			if ev.Regarding.Kind == "StorageVersionMigration" && ev.Regarding.Name == m.Name && ev.ReportingController == "concord-storage-migrator" && ev.Type == "Normal" {
				reasons = append(reasons, ev.Reason)
			}
		}
		slices.Sort(reasons)
		return slices.Equal(reasons, []string{controller.EventMigrationSucceeded, controller.EventStoredVersions}), nil
	})

	// The operator's view.
	var out bytes.Buffer
	cmd := migration.NewMigrationsCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--kubeconfig", s.KubeconfigPath, label})
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"RESOURCE", label, "Succeeded", fmt.Sprint(n), m.Name} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("concord migrations output lacks %q:\n%s", want, out.String())
		}
	}

	// A settled state is looked at every poll (200ms here), but written only when its
	// heartbeat is older than a quarter of the staleness window (15s here).
	settled := getState(t, dyn, e.gr)
	states, err := dyn.Resource(migrationapi.StorageStates).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const triggerName = "storage-migration-trigger"
	from, polls := reconciles(t, reg, triggerName), 3*float64(len(states.Items))
	waitFor(t, "three more polls of every resource", func() (bool, error) { return reconciles(t, reg, triggerName) >= from+polls, nil })
	after := getState(t, dyn, e.gr)
	renewal := trigger.HeartbeatInterval(200*time.Millisecond, time.Minute)
	if age := after.Status.LastHeartbeatTime.Sub(settled.Status.LastHeartbeatTime.Time); after.ResourceVersion != settled.ResourceVersion && age < renewal-time.Second {
		t.Errorf("the settled state was written again with a heartbeat %v newer (resourceVersion %s to %s): want none until it is %v old",
			age, settled.ResourceVersion, after.ResourceVersion, renewal)
	}
}

// reconciles is the number of reconciles controller made, whatever their outcome.
func reconciles(t *testing.T, reg *prometheus.Registry, controller string) float64 {
	t.Helper()
	var total float64
	for _, m := range samples(t, reg, "concord_controller_reconcile_total", "controller", controller) {
		total += m.GetCounter().GetValue()
	}
	return total
}

// metricValue returns the value of the sample of a gauge or counter whose resource
// label is resource.
func metricValue(t *testing.T, reg *prometheus.Registry, name, resource string) float64 {
	t.Helper()
	ms := samples(t, reg, name, "resource", resource)
	switch {
	case len(ms) == 0:
		return -1
	case ms[0].Counter != nil:
		return ms[0].Counter.GetValue()
	}
	return ms[0].Gauge.GetValue()
}

// samples returns the samples of metric name in reg whose label is value.
func samples(t *testing.T, reg *prometheus.Registry, name, label, value string) []*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []*dto.Metric
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					out = append(out, m)
				}
			}
		}
	}
	return out
}

// withoutStorageVersions turns the StorageVersion API off: the trigger then polls
// discovery's storageVersionHash.
func withoutStorageVersions() harness.Option {
	return harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		o.Compatibility.FeatureGates = append(o.Compatibility.FeatureGates, "StorageVersionAPI=false")
	})
}

// waitMigration waits until the migration of gr with the given sequence number
// satisfies cond, and returns it.
func waitMigration(t *testing.T, dyn dynamic.Interface, gr schema.GroupResource, n int, what string,
	cond func(*migrationapi.StorageVersionMigration) bool) *migrationapi.StorageVersionMigration {
	t.Helper()
	name := fmt.Sprintf("%s-%d", migrationapi.StorageStateName(gr), n)
	var got *migrationapi.StorageVersionMigration
	waitMigrating(t, dyn, name+" "+what, func() (bool, error) {
		u, err := dyn.Resource(migrationapi.StorageVersionMigrations).Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		got = &migrationapi.StorageVersionMigration{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, got); err != nil {
			return false, err
		}
		return cond(got), nil
	})
	return got
}

func migrated(atLeast int64) func(*migrationapi.StorageVersionMigration) bool {
	return func(m *migrationapi.StorageVersionMigration) bool {
		return m.Phase() == migrationapi.ConditionRunning && m.Status.Progress != nil && m.Status.Progress.Migrated >= atLeast
	}
}

func phase(p string) func(*migrationapi.StorageVersionMigration) bool {
	return func(m *migrationapi.StorageVersionMigration) bool { return m.Phase() == p }
}

// The server path and the client path give the same results on the same data: every
// good object rewritten (etcd shows the new version), the invalid ones skipped and
// reported by name with the server's reason, left in the old version; a second pass
// rewrites nothing (a no-op write does not move the resourceVersion).
func TestStorageMigrationPathsAgree(t *testing.T) {
	t.Parallel()
	c := startMigrationCluster(t, 1)
	s := c.Servers[0]
	const good, bad = 150, 3
	envs := map[migrator.Mode]*migrationEnv{}
	for _, mode := range []migrator.Mode{migrator.ModeAuto, migrator.ModeClient} {
		e := newMigrationEnv(t, c, string(mode)+".paths.example.com", "v1")
		e.seed("good", "v1", good, 1)
		e.seed("bad", "v1", bad, -1)
		e.flip("v2")
		envs[mode] = e
	}
	results := map[migrator.Mode]migrator.Checkpoint{}
	for mode, e := range envs {
		m, err := migrator.New(s.Config(), migrator.Options{Mode: mode, PageSize: 40, Concurrency: 4})
		if err != nil {
			t.Fatal(err)
		}
		res := migrator.Resource{GroupVersionResource: e.gvr("v2"), Namespaced: true}
		pages := 0
		cp, err := m.Migrate(t.Context(), res, migrator.Checkpoint{}, func(context.Context, migrator.PageReport) error { pages++; return nil })
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		results[mode] = cp
		if want := (migrator.Counts{Migrated: good, Failed: bad}); cp.Counts != want || cp.Total == nil || *cp.Total != good+bad || pages != 4 {
			t.Errorf("%s: %+v in %d pages, want %+v of %d in 4 pages", mode, cp, pages, want, good+bad)
		}
		if got, want := e.encodings(), map[string]int{e.gr.Group + "/v2": good, e.gr.Group + "/v1": bad}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: etcd holds %v, want %v", mode, got, want)
		}
		again, err := m.Migrate(t.Context(), res, migrator.Checkpoint{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := (migrator.Counts{Skipped: good, Failed: bad}); again.Counts != want {
			t.Errorf("%s: second pass %+v, want %+v", mode, again.Counts, want)
		}
	}
	server, client := results[migrator.ModeAuto], results[migrator.ModeClient]
	if server.Path != migrator.PathServer || client.Path != migrator.PathClient {
		t.Fatalf("paths %s and %s", server.Path, client.Path)
	}
	for i := range bad {
		fs, fc := server.Failures[i], client.Failures[i]
		if fs.Name != fc.Name || fs.Namespace != "default" || fc.Namespace != "default" {
			t.Errorf("failure %d: server %+v, client %+v", i, fs, fc)
		}
		for _, f := range []migrator.Failure{fs, fc} {
			if !strings.Contains(f.Reason, "spec.size") {
				t.Errorf("reason %q does not name the invalid field", f.Reason)
			}
		}
	}
}

// A migrator stopped mid-way (its controller-manager crashes) resumes from the
// checkpoint in the migration's status: the same migration completes, and only the
// page in flight is seen twice.
func TestStorageMigrationCrashResumes(t *testing.T) {
	t.Parallel()
	c := startMigrationCluster(t, 1)
	s := c.Servers[0]
	e := newMigrationEnv(t, c, "crash.example.com", "v1")
	const n, page = 400, 25
	e.seed("w", "v1", n, 1)
	e.flip("v2")
	// Half the rewrites go through, the rest wait for the crash.
	gate := &writeGate{}
	gate.hold(n / 2)
	cfg := only(fastConfig(gate.wrap(s.Config()), nil), s, e.gr)
	cfg.Migrator = migrator.Options{Mode: migrator.ModeClient, PageSize: page, Concurrency: 2}
	stop := runControllers(t, cfg)
	dyn := s.Dynamic(t)
	waitMigration(t, dyn, e.gr, 1, "to be part-way", migrated(n/4))
	stop()
	gate.release()

	mid := waitMigration(t, dyn, e.gr, 1, "to keep its checkpoint", phase(migrationapi.ConditionRunning))
	p := mid.Status.Progress
	if p.Continue == "" || p.Path != migrationapi.PathClient || p.Migrated >= n {
		t.Fatalf("after the crash: %+v, want a checkpoint part-way", p)
	}
	if v2 := e.encodings()["crash.example.com/v2"]; int64(v2) < p.Migrated {
		t.Errorf("etcd holds %d objects in v2, fewer than the %d checkpointed", v2, p.Migrated)
	}

	runControllers(t, cfg)
	waitPersisted(t, dyn, e.gr, e.hash("v2"), e.hash("v2"))
	migs := migrationsOf(t, dyn, e.gr)
	if len(migs) != 1 {
		t.Fatalf("%d migrations, want the first one resumed", len(migs))
	}
	final := migs[0].Status.Progress
	if migs[0].Phase() != migrationapi.ConditionSucceeded || final.Migrated+final.Skipped != n || final.Failed != 0 || final.Skipped > 2*page {
		t.Errorf("after resuming: %s %+v; want Succeeded, %d objects, at most %d seen twice", migs[0].Phase(), final, n, 2*page)
	}
	if got := e.encodings(); got["crash.example.com/v2"] != n {
		t.Errorf("etcd holds %v, want all %d in v2", got, n)
	}
}

// Writers keep updating objects through both servers while they are migrated, on the
// client path and then (back to the first version) on the server path: every write is
// kept, and every object ends in the new version.
func TestStorageMigrationConcurrentWriters(t *testing.T) {
	t.Parallel()
	c := startMigrationCluster(t, 2)
	e := newMigrationEnv(t, c, "writers.example.com", "v1")
	const n, writers = 300, 4
	e.seed("w", "v1", n, 1)
	dyn := c.Servers[0].Dynamic(t)
	for i, step := range []struct {
		to   string
		mode migrator.Mode
	}{{"v2", migrator.ModeClient}, {"v1", migrator.ModeAuto}} {
		e.flip(step.to)
		var done atomic.Bool
		last := make([]map[string]int, writers)
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			last[w] = map[string]int{}
			client := c.Servers[w%2].Dynamic(t).Resource(e.gvr("v2")).Namespace("default")
			wg.Go(func() {
				for k := 0; !done.Load(); k++ {
					name := fmt.Sprintf("w-%04d", (k*writers+w)%n)
					patch := fmt.Appendf(nil, `{"spec":{"note":"%d-%d"}}`, w, k)
					if _, err := client.Patch(t.Context(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
						errs <- fmt.Errorf("writer %d: %w", w, err)
						return
					}
					last[w][name] = k
				}
			})
		}
		cfg := only(fastConfig(c.Servers[0].Config(), nil), c.Servers[0], e.gr)
		cfg.Migrator = migrator.Options{Mode: step.mode, PageSize: 30, Concurrency: 4}
		stop := runControllers(t, cfg)
		waitPersisted(t, dyn, e.gr, e.hash(step.to), e.hash(step.to))
		time.Sleep(100 * time.Millisecond)
		done.Store(true)
		wg.Wait()
		stop()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		list, err := dyn.Resource(e.gvr("v2")).Namespace("default").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range list.Items {
			note, _, _ := unstructured.NestedString(item.Object, "spec", "note")
			var w, k int
			if _, err := fmt.Sscanf(note, "%d-%d", &w, &k); err != nil {
				continue // not written in this step's first pass
			}
			if want, ok := last[w][item.GetName()]; ok && k != want {
				t.Errorf("step %d: %s has note %q, but writer %d last wrote %d", i, item.GetName(), note, w, want)
			}
		}
		writes := 0
		for w := range writers {
			writes += len(last[w])
		}
		if writes == 0 {
			t.Errorf("step %d: the writers wrote nothing", i)
		}
		if got := e.encodings(); got[e.gr.Group+"/"+step.to] != n || len(got) != 1 {
			t.Errorf("step %d: etcd holds %v, want all %d in %s", i, got, n, step.to)
		}
		migs := migrationsOf(t, dyn, e.gr)
		if p := migs[len(migs)-1].Status.Progress; p == nil || p.Failed != 0 || p.Path != map[migrator.Mode]string{migrator.ModeClient: migrationapi.PathClient, migrator.ModeAuto: migrationapi.PathServer}[step.mode] {
			t.Errorf("step %d: last migration's progress %+v", i, p)
		}
	}
}

// fakeServers adds (or replaces) entries of made-up servers in the StorageVersion of
// gr, each with a live identity lease so that no garbage collector takes it, the
// way a server of a rolling upgrade that is not yet (or already) upgraded reports.
// The real servers keep their own entries.
func fakeServers(t *testing.T, s *harness.Server, gr schema.GroupResource, versions map[string]string) {
	t.Helper()
	ctx := t.Context()
	cs := s.Clientset(t)
	for id := range versions {
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: "kube-system", Labels: map[string]string{"apiserver.kubernetes.io/identity": "kube-apiserver"}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptrTo(id + "_test"), LeaseDurationSeconds: ptrTo(int32(3600)),
				RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}
		if _, err := cs.CoordinationV1().Leases("kube-system").Create(ctx, lease, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	loopback, err := dynamic.NewForConfig(s.LoopbackConfig())
	if err != nil {
		t.Fatal(err)
	}
	svs := loopback.Resource(migrationapi.StorageVersions)
	name := gr.Group + "." + gr.Resource
	err = retryConflict(func() error {
		u, err := svs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		sv := &apiserverinternalv1alpha1.StorageVersion{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, sv); err != nil {
			return err
		}
		var entries []apiserverinternalv1alpha1.ServerStorageVersion
		for _, e := range sv.Status.StorageVersions {
			if _, fake := versions[e.APIServerID]; !fake {
				entries = append(entries, e)
			}
		}
		for id, v := range versions {
			if v == "" {
				continue // withdrawn
			}
			all := []string{gr.Group + "/v2", gr.Group + "/v1"}
			entries = append(entries, apiserverinternalv1alpha1.ServerStorageVersion{APIServerID: id, EncodingVersion: gr.Group + "/" + v,
				DecodableVersions: all, ServedVersions: all})
		}
		wire.SetStorageVersionEntries(sv, entries, time.Now())
		st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&sv.Status)
		if err != nil {
			return err
		}
		u.Object["status"] = st
		_, err = svs.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writeGate holds a client's PUTs of widgets (a migrator's rewrites) once told to,
// after letting a number through, until released or their request is cancelled.
type writeGate struct {
	mu      sync.Mutex
	allowed int
	open    chan struct{} // nil: not holding
}

func (g *writeGate) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/widgets/") {
				if err := g.wait(r.Context()); err != nil {
					return nil, err
				}
			}
			return rt.RoundTrip(r)
		})
	})
	return cfg
}

func (g *writeGate) wait(ctx context.Context) error {
	g.mu.Lock()
	open := g.open
	if open != nil && g.allowed > 0 {
		g.allowed--
		open = nil
	}
	g.mu.Unlock()
	if open == nil {
		return nil
	}
	select {
	case <-open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// hold lets n more rewrites through and holds the rest.
func (g *writeGate) hold(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.allowed, g.open = n, make(chan struct{})
}

// release lets every rewrite through again.
func (g *writeGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open != nil {
		close(g.open)
		g.open = nil
	}
}

// A rolling upgrade seen through the StorageVersion API, with two real servers and
// made-up ones standing for servers not yet upgraded: no migration while the servers
// disagree, exactly one once they agree; a migration running when they disagree again
// is aborted; one whose StorageVersion changes before it ends while every server
// agrees (a server of the same release joins) goes on and completes.
func TestStorageMigrationHA(t *testing.T) {
	t.Parallel()
	c := startMigrationCluster(t, 2)
	s := c.Servers[0]
	e := newMigrationEnv(t, c, "ha.example.com", "v1")
	const n = 150
	e.seed("w", "v1", n, 1)
	fakeServers(t, s, e.gr, map[string]string{"fake-old": "v1"})
	// The migrator's rewrites go through a gate that holds them, so that the test acts
	// while a migration runs however fast or slow the machine is.
	gate := &writeGate{}
	cfg := only(fastConfig(gate.wrap(s.Config()), nil), s, e.gr)
	cfg.HistoryLimit = 10
	cfg.Migrator = migrator.Options{Mode: migrator.ModeClient, PageSize: 10, Concurrency: 1}
	runControllers(t, cfg)
	dyn := s.Dynamic(t)
	h1, h2 := e.hash("v1"), e.hash("v2")
	waitPersisted(t, dyn, e.gr, h1, h1)
	count := func() int { return len(migrationsOf(t, dyn, e.gr)) }
	if got := count(); got != 1 {
		t.Fatalf("%d migrations after the first sight, want 1", got)
	}

	// The real servers are upgraded (they now write v2); fake-old still writes v1.
	e.flip("v2")
	waitPersisted(t, dyn, e.gr, migrationapi.Unknown, h1, h2)
	time.Sleep(time.Second) // five polls
	if got := count(); got != 1 {
		t.Fatalf("%d migrations while the servers disagree, want none started", got)
	}

	// fake-old is upgraded: agreement, one migration. A rollback of fake-old starts
	// while it runs: it is aborted.
	gate.hold(15)
	fakeServers(t, s, e.gr, map[string]string{"fake-old": "v2"})
	waitMigration(t, dyn, e.gr, 2, "to run", migrated(10))
	fakeServers(t, s, e.gr, map[string]string{"fake-old": "v1"})
	m2 := waitMigration(t, dyn, e.gr, 2, "to be aborted", phase(migrationapi.ConditionFailed))
	gate.release()
	if c := findMigrationCondition(m2, migrationapi.ConditionFailed); c.Reason != migrationapi.ReasonStorageVersionsDisagree {
		t.Errorf("migration 2 failed with %s, want %s", c.Reason, migrationapi.ReasonStorageVersionsDisagree)
	}
	waitPersisted(t, dyn, e.gr, migrationapi.Unknown, h1, h2)

	// Agreement again: one new migration; a server joins while it runs (same version,
	// new StorageVersion resourceVersion): every revision since it started agreed on
	// v2, so it is kept, its guard moves to the new resourceVersion, and it ends.
	gate.hold(15)
	fakeServers(t, s, e.gr, map[string]string{"fake-old": "v2"})
	// Migration 2's rewrites are no-op writes now (skipped).
	waitMigration(t, dyn, e.gr, 3, "to run", func(m *migrationapi.StorageVersionMigration) bool {
		return m.Phase() == migrationapi.ConditionRunning && m.Status.Progress != nil && m.Status.Progress.Migrated+m.Status.Progress.Skipped >= 10
	})
	fakeServers(t, s, e.gr, map[string]string{"fake-new": "v2"})
	joined := storageVersionRevision(t, e)
	gate.release()
	m3 := waitMigration(t, dyn, e.gr, 3, "to end", func(m *migrationapi.StorageVersionMigration) bool { return m.Terminal() })
	if m3.Phase() != migrationapi.ConditionSucceeded || rvNumber(t, m3.Annotations[migrationapi.AnnotationStorageVersionResourceVersion]) < joined {
		t.Errorf("migration 3 ended %s with its guard at %s, want Succeeded, moved to %d or later", m3.Phase(),
			m3.Annotations[migrationapi.AnnotationStorageVersionResourceVersion], joined)
	}
	waitPersisted(t, dyn, e.gr, h2, h2)
	migs := migrationsOf(t, dyn, e.gr)
	var phases []string
	for _, m := range migs {
		phases = append(phases, m.Name+"="+m.Phase())
	}
	want := []string{"widgets.ha.example.com-1=Succeeded", "widgets.ha.example.com-2=Failed", "widgets.ha.example.com-3=Succeeded"}
	if !slices.Equal(phases, want) {
		t.Errorf("migrations %v, want %v", phases, want)
	}
	last := migs[len(migs)-1]
	if last.Annotations[migrationapi.AnnotationEncodingVersion] != "ha.example.com/v2" || last.Annotations[migrationapi.AnnotationStorageVersionResourceVersion] == "" {
		t.Errorf("last migration's annotations %v", last.Annotations)
	}
	if got := e.encodings(); got["ha.example.com/v2"] != n || len(got) != 1 {
		t.Errorf("etcd holds %v, want all %d in v2", got, n)
	}
}

func findMigrationCondition(m *migrationapi.StorageVersionMigration, t string) metav1.Condition {
	for _, c := range m.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return metav1.Condition{}
}

// The KEP's life-cycle story, the trigger polling discovery: a CronJob-like resource
// stored in v1beta1 ("1.14"), upgraded to v1 ("1.15"), downgraded back, then the
// controllers down longer than the staleness window. The StorageState goes through
// exactly the KEP's states, each migration rewrites every object (etcd shows it), and
// storedVersions follows.
func TestStorageStateLifecycleStory(t *testing.T) {
	c := startMigrationCluster(t, 1, withoutStorageVersions())
	s := c.Servers[0]
	e := newMigrationEnv(t, c, "lifecycle.example.com", "v1beta1", "v1beta1", "v1")
	const n = 60
	e.seed("cron", "v1beta1", n, 1)
	dyn := s.Dynamic(t)

	if err := migration.EnsureCRDs(t.Context(), s.Config()); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var history [][]string
	w, err := dyn.Resource(migrationapi.StorageStates).Watch(t.Context(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", migrationapi.StorageStateName(e.gr)).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	go func() {
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			p, _, _ := unstructured.NestedStringSlice(u.Object, "status", "persistedStorageVersionHashes")
			mu.Lock()
			if len(p) > 0 && (len(history) == 0 || !slices.Equal(history[len(history)-1], p)) {
				history = append(history, p)
			}
			mu.Unlock()
		}
	}()

	cfg := only(fastConfig(s.Config(), nil), s, e.gr) // a staleness window of a minute
	cfg.HistoryLimit = 10
	stop := runControllers(t, cfg)
	hBeta, hV1 := e.hash("v1beta1"), e.hash("v1")
	storedVersions := func() []string {
		crd, err := crdClient(t, s).ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), e.crd.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return crd.Status.StoredVersions
	}
	for _, step := range []struct{ name, to, hash string }{
		{"1.14", "v1beta1", hBeta}, {"upgrade to 1.15", "v1", hV1}, {"downgrade to 1.14", "v1beta1", hBeta},
	} {
		if step.to != e.crd.Spec.Versions[0].Name || step.name != "1.14" {
			e.flip(step.to)
		}
		waitPersisted(t, dyn, e.gr, step.hash, step.hash)
		if got := e.encodings(); got["lifecycle.example.com/"+step.to] != n || len(got) != 1 {
			t.Errorf("%s: etcd holds %v, want all %d in %s", step.name, got, n, step.to)
		}
		if got := storedVersions(); !slices.Equal(got, []string{step.to}) {
			t.Errorf("%s: storedVersions %v, want [%s]", step.name, got, step.to)
		}
	}

	// Down longer than the staleness window: the state is reset and the resource
	// migrated again. The heartbeat is set back by a window rather than waited out, so
	// that a window short enough to wait would not also be outrun by a heartbeat that
	// comes late on a loaded machine.
	stop()
	ageHeartbeat(t, dyn, e.gr, cfg.StalenessWindow+time.Second)
	runControllers(t, cfg)
	waitMigration(t, dyn, e.gr, 4, "to succeed", phase(migrationapi.ConditionSucceeded))
	waitPersisted(t, dyn, e.gr, hBeta, hBeta)

	want := [][]string{{migrationapi.Unknown}, {hBeta}, {hBeta, hV1}, {hV1}, {hV1, hBeta}, {hBeta}, {migrationapi.Unknown}, {hBeta}}
	// The watch may deliver the last change after the read above saw it.
	waitFor(t, "the watch to see the state persisted again", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(history) >= len(want), nil
	})
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(history) != fmt.Sprint(want) {
		t.Errorf("persisted hashes went through\n%v\nwant\n%v", history, want)
	}
	if got := len(migrationsOf(t, dyn, e.gr)); got != 4 {
		t.Errorf("%d migrations, want 4", got)
	}
}

// ageHeartbeat sets the StorageState of gr's lastHeartbeatTime back by age, as if its
// controllers had been down that long.
func ageHeartbeat(t *testing.T, dyn dynamic.Interface, gr schema.GroupResource, age time.Duration) {
	t.Helper()
	states := dyn.Resource(migrationapi.StorageStates)
	u, err := states.Get(t.Context(), migrationapi.StorageStateName(gr), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-age).UTC().Format(time.RFC3339)
	if err := unstructured.SetNestedField(u.Object, old, "status", "lastHeartbeatTime"); err != nil {
		t.Fatal(err)
	}
	if _, err := states.UpdateStatus(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The server the migrator talks to goes away mid-migration and comes back: the
// migration ends (resumed, or replaced when the server's StorageVersion entries came
// and went), every object is rewritten once in all, and etcd shows the new version.
func TestStorageMigrationServerKilled(t *testing.T) {
	t.Parallel()
	c := startMigrationCluster(t, 2)
	e := newMigrationEnv(t, c, "killed.example.com", "v1")
	const n = 300
	e.seed("w", "v1", n, 1)
	e.flip("v2")
	victim := c.Servers[1]
	cfg := only(fastConfig(victim.Config(), nil), victim, e.gr)
	cfg.Migrator = migrator.Options{Mode: migrator.ModeClient, PageSize: 20, Concurrency: 2, QPS: 150, Burst: 1,
		InitialBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, MaxAttempts: 3}
	runControllers(t, cfg)
	dyn := c.Servers[0].Dynamic(t)
	waitMigration(t, dyn, e.gr, 1, "to be under way", migrated(n/4))
	victim.Stop(t)
	time.Sleep(500 * time.Millisecond)
	victim.Restart(t)
	waitPersisted(t, dyn, e.gr, e.hash("v2"), e.hash("v2"))
	var migrated, skipped int64
	migs := migrationsOf(t, dyn, e.gr)
	for _, m := range migs {
		if p := m.Status.Progress; p != nil {
			migrated, skipped = migrated+p.Migrated, skipped+p.Skipped
		}
	}
	if last := migs[len(migs)-1]; last.Phase() != migrationapi.ConditionSucceeded {
		t.Errorf("last migration %s is %s", last.Name, last.Phase())
	}
	// Every object is rewritten once in all, and counted migrated at most once. A
	// rewrite that no status counts (its answer lost with the server, or its page in
	// flight when the run stopped: the migration resumed, was replaced, or had its
	// guard moved) leaves an object already current, which a later pass counts as
	// skipped.
	if migrated > n || migrated+skipped < n {
		t.Errorf("%d objects migrated and %d skipped over %d migrations; want at most %d migrated, and every object migrated or skipped", migrated, skipped, len(migs), n)
	}
	if got := e.encodings(); got["killed.example.com/v2"] != n || len(got) != 1 {
		t.Errorf("etcd holds %v, want all %d in v2", got, n)
	}
}

// Against a real kube-apiserver the client path does the work, with the StorageState
// and StorageVersionMigration APIs installed as definitions. It needs the cluster's
// kubeconfig (CONCORD_TEST_KUBECONFIG) and its etcd (CONCORD_TEST_ETCD, comma-
// separated client URLs; CONCORD_TEST_ETCD_PREFIX, default /registry), to read what is
// stored.
func TestStorageMigrationRealKubernetes(t *testing.T) {
	t.Parallel()
	kubeconfig, endpoints := os.Getenv("CONCORD_TEST_KUBECONFIG"), os.Getenv("CONCORD_TEST_ETCD")
	if kubeconfig == "" || endpoints == "" {
		t.Skip("set CONCORD_TEST_KUBECONFIG (an admin kubeconfig of a kube-apiserver) and CONCORD_TEST_ETCD (the client URLs of its etcd) to run the migration against real Kubernetes")
	}
	prefix := os.Getenv("CONCORD_TEST_ETCD_PREFIX")
	if prefix == "" {
		prefix = "/registry"
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = -1, 0
	etcdClient, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(endpoints, ","), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcdClient.Close()
	ctx := t.Context()
	if err := migration.EnsureCRDs(ctx, rc); err != nil {
		t.Fatal(err)
	}
	group := fmt.Sprintf("realkube%d.example.com", time.Now().Unix())
	crd := widgetCRD(group, "v1")
	cs, err := apiextensionsclient.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	defs := cs.ApiextensionsV1().CustomResourceDefinitions()
	if _, err := defs.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = defs.Delete(context.WithoutCancel(ctx), crd.Name, metav1.DeleteOptions{}) })
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	const n = 100
	waitFor(t, "the definition to be served", func() (bool, error) {
		_, err := dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	for i := range n {
		o := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": group + "/v1", "kind": "Widget",
			"metadata": map[string]interface{}{"name": fmt.Sprintf("w-%03d", i)}, "spec": map[string]interface{}{"size": int64(1)}}}
		if _, err := dyn.Resource(gvr).Namespace("default").Create(ctx, o, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err = retryConflict(func() error {
		cur, err := defs.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Versions[0].Storage, cur.Spec.Versions[1].Storage = false, true
		_, err = defs.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // kube-apiserver swaps the storage of a definition asynchronously
	cfg := fastConfig(rc, nil)
	cfg.LeaderElection.Disabled = true
	runControllers(t, cfg)
	gr := gvr.GroupResource()
	waitPersisted(t, dyn, gr, wire.StorageVersionHash(group, "v2", "Widget"), wire.StorageVersionHash(group, "v2", "Widget"))
	migs := migrationsOf(t, dyn, gr)
	last := migs[len(migs)-1]
	if last.Phase() != migrationapi.ConditionSucceeded {
		t.Fatalf("migration %s is %s", last.Name, last.Phase())
	}
	if p := last.Status.Progress; p != nil && p.Path != migrationapi.PathClient {
		t.Errorf("path %s, want the client path", p.Path)
	}
	if got := etcdEncodings(t, etcdClient, prefix+"/"+group+"/widgets/"); got[group+"/v2"] != n || len(got) != 1 {
		t.Errorf("etcd holds %v, want all %d in v2", got, n)
	}
}

// With nothing configured, servers run the migration controllers themselves: a CRD
// storage-version change on a two-server cluster ends, unprompted, with every object
// re-encoded in the new version in etcd and storedVersions trimmed.
func TestStorageMigrationInProcess(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, harness.WithStorageMigration())
	e := newMigrationEnv(t, c, "auto.example.com", "v1", "v1", "v2")
	const n = 40
	e.seed("w", "v1", n, 1)
	if got := e.encodings(); got["auto.example.com/v1"] != n {
		t.Fatalf("before the flip: %v", got)
	}
	e.flip("v2")
	dyn := c.Servers[0].Dynamic(t)
	waitUnstalled(t, "the flip's migration", func() (bool, string, error) {
		got := e.encodings()
		crd, err := crdClient(t, c.Servers[1]).ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), e.crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		// The definition is trimmed just before the migration is marked Succeeded.
		ms := migrationsOf(t, dyn, e.gr)
		succeeded := len(ms) > 0 && findMigrationCondition(ms[len(ms)-1], "Succeeded").Status == metav1.ConditionTrue
		mark, err := migrationsMark(t.Context(), dyn)
		done := got["auto.example.com/v2"] == n && len(got) == 1 && slices.Equal(crd.Status.StoredVersions, []string{"v2"}) && succeeded
		return done, fmt.Sprintf("encodings %v, storedVersions %v, migrations %s", got, crd.Status.StoredVersions, mark), err
	})
}

// Objects stored in a version no server can decode (written by a newer release, say)
// fail a Kubernetes list as a whole (500 StorageReadError naming them). The server path
// reads etcd itself and skips them; the client path reports them by name as failed
// objects and stops with ErrUnreadable instead of retrying a list that cannot succeed.
func TestStorageMigrationUnreadableObjects(t *testing.T) {
	t.Parallel()
	c := startMigrationCluster(t, 1)
	s := c.Servers[0]
	const good = 20
	unreadable := []string{"from-the-future-1", "from-the-future-2"}
	for _, mode := range []migrator.Mode{migrator.ModeAuto, migrator.ModeClient} {
		e := newMigrationEnv(t, c, string(mode)+".unreadable.example.com", "v1")
		e.seed("good", "v1", good, 1)
		for _, name := range unreadable {
			value := fmt.Sprintf(`{"apiVersion":"%s/v9","kind":"Widget","metadata":{"name":%q,"namespace":"default","uid":"u-%s"},"spec":{"size":1}}`,
				e.gr.Group, name, name)
			if _, err := c.EtcdClient.Put(t.Context(), "/registry/"+e.gr.Group+"/widgets/default/"+name, value); err != nil {
				t.Fatal(err)
			}
		}
		e.flip("v2")

		// What any client sees: the list fails and names both objects.
		_, err := s.Dynamic(t).Resource(e.gvr("v2")).Namespace("default").List(t.Context(), metav1.ListOptions{})
		var st apierrors.APIStatus
		if !apierrors.IsStoreReadError(err) || !errors.As(err, &st) || st.Status().Details == nil || len(st.Status().Details.Causes) != 2 {
			t.Fatalf("%s: list: %v, want a StorageReadError naming 2 objects", mode, err)
		}

		m, err := migrator.New(s.Config(), migrator.Options{Mode: mode, PageSize: 8, Concurrency: 2})
		if err != nil {
			t.Fatal(err)
		}
		var reported []migrator.Failure
		cp, err := m.Migrate(t.Context(), migrator.Resource{GroupVersionResource: e.gvr("v2"), Namespaced: true}, migrator.Checkpoint{},
			func(_ context.Context, r migrator.PageReport) error {
				reported = append(reported, r.Failures...)
				return nil
			})
		var names []string
		for _, f := range cp.Failures {
			names = append(names, f.Namespace+"/"+f.Name)
			if !strings.Contains(f.Reason, e.gr.Group+"/v9") {
				t.Errorf("%s: reason %q does not name the stored version", mode, f.Reason)
			}
		}
		if want := "[default/from-the-future-1 default/from-the-future-2]"; fmt.Sprint(names) != want || len(reported) != 2 || cp.Failed != 2 {
			t.Errorf("%s: failures %v (reported %d, counted %d), want %s", mode, names, len(reported), cp.Failed, want)
		}
		switch mode {
		case migrator.ModeAuto:
			if err != nil || cp.Migrated != good || !cp.Finished() {
				t.Errorf("server path: %+v, %v; want the %d readable objects migrated", cp.Counts, err, good)
			}
			if got := e.encodings(); got[e.gr.Group+"/v2"] != good || got[e.gr.Group+"/v9"] != 2 {
				t.Errorf("server path: etcd holds %v", got)
			}
		case migrator.ModeClient:
			if !errors.Is(err, migrator.ErrUnreadable) || cp.Finished() {
				t.Errorf("client path: %v (finished %v), want ErrUnreadable", err, cp.Finished())
			}
		}
	}
}
