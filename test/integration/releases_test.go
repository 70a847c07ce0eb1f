package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/migration"
	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/storageversion"
	"github.com/concordproject/concord/wire"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// releases returns the catalog's release N-1 and N ("1.36", "1.37").
func releases(t *testing.T) (older, newer string) {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	n := cat.BinaryVersion()
	return fmt.Sprintf("%d.%d", n.Major(), n.Minor()-1), fmt.Sprintf("%d.%d", n.Major(), n.Minor())
}

// Regression (safety issue, defect 1): a fleet of two releases serves the
// storage-migration API alike. Servers of N and N-1 on one etcd all serve
// storagemigration.k8s.io/v1 themselves (no CustomResourceDefinition is installed
// beside it to flap between KindConflict and NoConflicts), every server lists the
// migrations the others wrote, and once the migrations the trigger started are done
// the cluster is quiet: no object but the leases is written twice in a few seconds.
func TestMixedReleasesShareTheMigrationAPI(t *testing.T) {
	t.Parallel()
	older, _ := releases(t)
	c := harness.Start(t, 3, harness.WithStorageMigration(), harness.WithServerOptions(func(i int, o *controlplane.Options) {
		if i == 2 {
			o.Compatibility.BinaryVersion = older
		}
	}))
	for _, s := range c.Servers {
		list, err := s.Clientset(t).Discovery().ServerResourcesForGroupVersion("storagemigration.k8s.io/v1")
		if err != nil || !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "storageversionmigrations" }) {
			t.Fatalf("server %d does not serve storagemigration.k8s.io/v1 storageversionmigrations: %v", s.Index, err)
		}
	}
	// Every server's trigger starts migrations of every resource; wait until they are
	// all done, read through the oldest server.
	waitMigrating(t, c.Servers[2].Dynamic(t), "the first migrations to end, listed by the N-1 server", func() (bool, error) {
		list, err := c.Servers[2].Dynamic(t).Resource(migrationapi.StorageVersionMigrations).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i := range list.Items {
			if !migrationEnded(&list.Items[i]) {
				return false, nil
			}
		}
		return len(list.Items) > 0, nil
	})
	crd, err := crdClient(t, c.Servers[0]).ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "storageversionmigrations.storagemigration.k8s.io", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("a StorageVersionMigration definition was installed beside the built-in API: %v %v", err, crd.Status.Conditions)
	}
	// A migration created through the N-1 server is read by the N servers, and the
	// other way round.
	for _, pair := range [][2]int{{2, 0}, {0, 2}} {
		name := fmt.Sprintf("by-hand-%d", pair[0])
		m := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "storagemigration.k8s.io/v1", "kind": "StorageVersionMigration",
			"metadata": map[string]interface{}{"name": name},
			"spec":     map[string]interface{}{"resource": map[string]interface{}{"group": "", "resource": "configmaps"}},
		}}
		if _, err := c.Servers[pair[0]].Dynamic(t).Resource(migrationapi.StorageVersionMigrations).Create(t.Context(), m, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating through server %d: %v", pair[0], err)
		}
		if _, err := c.Servers[pair[1]].Dynamic(t).Resource(migrationapi.StorageVersionMigrations).Get(t.Context(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("reading through server %d what server %d wrote: %v", pair[1], pair[0], err)
		}
	}
	waitMigrating(t, c.Servers[0].Dynamic(t), "the migrations by hand to end", func() (bool, error) {
		for _, s := range []int{0, 2} {
			u, err := c.Servers[0].Dynamic(t).Resource(migrationapi.StorageVersionMigrations).Get(t.Context(), fmt.Sprintf("by-hand-%d", s), metav1.GetOptions{})
			if err != nil || !migrationEnded(u) {
				return false, err
			}
		}
		return true, nil
	})
	// The migrations listed above may not be all the triggers start, so the fleet has
	// half a minute to fall quiet.
	waitQuiet(t, c.EtcdClient, 3*time.Second, 30*time.Second)
}

// migrationEnded reports whether a StorageVersionMigration has a True Succeeded or
// Failed condition.
func migrationEnded(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]interface{})
		if (m["type"] == "Succeeded" || m["type"] == "Failed") && m["status"] == "True" {
			return true
		}
	}
	return false
}

// waitQuiet watches every key of the cluster's etcd in windows of d until one passes
// in which no object but a lease or an Event is written more than once (a stable fleet
// writes nothing but heartbeats, once a minute at most), and fails if none has within
// limit, naming what the last window wrote twice.
func waitQuiet(t *testing.T, cli *clientv3.Client, d, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		writes := writesIn(t, cli, d)
		var noisy []string
		for key, n := range writes {
			if n > 1 {
				noisy = append(noisy, fmt.Sprintf("%s written %d times", key, n))
			}
		}
		if len(noisy) == 0 {
			t.Logf("%d objects written in %v of a stable fleet", len(writes), d)
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("no %v without rewrites in %v; the last window:\n%s", d, limit, strings.Join(noisy, "\n"))
			return
		}
	}
}

// writesIn counts the writes of each etcd key but leases' and Events' for d.
func writesIn(t *testing.T, cli *clientv3.Client, d time.Duration) map[string]int {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	writes := map[string]int{}
	for resp := range cli.Watch(ctx, "/registry/", clientv3.WithPrefix()) {
		for _, ev := range resp.Events {
			key := string(ev.Kv.Key)
			if strings.Contains(key, "/leases/") || strings.Contains(key, "/events/") {
				continue
			}
			writes[key]++
		}
	}
	return writes
}

// Regression (safety issue, defect 2): a server restarted with the emulation version
// one minor lower (KEP-4330's rollback) starts storage migration: its definitions are
// installed, /readyz says so, and the resources whose storage version the rollback
// changes are migrated down.
func TestEmulationRollbackMigrates(t *testing.T) {
	t.Parallel()
	older, _ := releases(t)
	c := harness.Start(t, 1, harness.WithStorageMigration())
	s := c.Servers[0]
	gr := schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"}
	dyn := s.Dynamic(t)
	// It waits its turn in the server's first sweep of every resource.
	waitUnstalled(t, "the first migration of "+gr.String(), func() (bool, string, error) {
		if st := getState(t, dyn, gr); st != nil && len(st.Status.PersistedStorageVersionHashes) == 1 && st.Status.PersistedStorageVersionHashes[0] != migrationapi.Unknown {
			return true, "", nil
		}
		mark, err := migrationsMark(t.Context(), dyn)
		return false, mark, err
	})
	before := getState(t, dyn, gr).Status.CurrentStorageVersionHash

	s.Options.Compatibility.EmulationVersion = []string{older}
	s.Restart(t)
	waitFor(t, "readyz with the storage-migration definitions installed", func() (bool, error) {
		code, _, _, body := svHTTP(t, s.Config(), http.MethodGet, "/readyz/"+migration.DefinitionsCheck, nil)
		return code == http.StatusOK && strings.Contains(body, "ok"), nil
	})
	dyn = s.Dynamic(t)
	want := wire.StorageVersionHash(gr.Group, "v1beta1", "MutatingAdmissionPolicy")
	if want == before {
		t.Fatalf("the rollback to %s does not change %s's storage version: nothing to test", older, gr)
	}
	waitPersisted(t, dyn, gr, want, want)
	ms := migrationsOf(t, dyn, gr)
	if len(ms) == 0 || findMigrationCondition(ms[len(ms)-1], "Succeeded").Status != metav1.ConditionTrue {
		t.Fatalf("no successful downgrade migration of %s: %+v", gr, ms)
	}
}

// Regression (safety issue, defect 4): /readyz is ok only while the server accepts
// writes. After start-up, the server's entry changed behind its back and the object
// made unwritable closes configmaps' gate: /readyz fails naming it; repaired, it is ok
// again. The entry is changed, not removed: the storage-version collector deletes an
// object without entries, and the server then writes a new one. Under load, in a suite
// run, the collector started just after the change, deleted the object at its first
// pass, and the gate was open again before the test looked.
func TestReadinessFollowsTheBarrier(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, harness.WithStorageMigration())
	s := c.Servers[0]
	cfg := s.Config()
	key := "/registry/internal.apiserver.k8s.io/storageversions/core.configmaps"
	resp, err := c.EtcdClient.Get(t.Context(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading %s: %v", key, err)
	}
	original := resp.Kvs[0].Value
	var obj map[string]interface{}
	if err := json.Unmarshal(original, &obj); err != nil {
		t.Fatal(err)
	}
	status := obj["status"].(map[string]interface{})
	entries := status["storageVersions"].([]interface{})
	if len(entries) != 1 {
		t.Fatalf("%s has %d entries, want the server's alone", key, len(entries))
	}
	entry := entries[0].(map[string]interface{})
	entry["decodableVersions"] = append(entry["decodableVersions"].([]interface{}), "v0")
	status["conditions"] = append(status["conditions"].([]interface{}),
		map[string]interface{}{"type": "Poisoned", "status": "True", "reason": "", "message": "written behind the servers' back"})
	b, _ := json.Marshal(obj)
	if _, err := c.EtcdClient.Put(t.Context(), key, string(b)); err != nil {
		t.Fatal(err)
	}
	var body string
	waitFor(t, "readyz to fail, naming the check, while configmap writes are refused", func() (bool, error) {
		var code int
		code, _, _, body = svHTTP(t, cfg, http.MethodGet, "/readyz?verbose", nil)
		return code == http.StatusInternalServerError && strings.Contains(body, "[-]"+storageversion.WritesCheck+" failed"), nil
	})
	code, _, _, detail := svHTTP(t, cfg, http.MethodGet, "/readyz/"+storageversion.WritesCheck, nil)
	if code != http.StatusInternalServerError || !strings.Contains(detail, "configmaps") {
		t.Errorf("the check's own answer: %d %s", code, detail)
	}
	if code, _, _, _ := svHTTP(t, cfg, http.MethodPost, "/api/v1/namespaces/default/configmaps",
		map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "refused"}}); code != http.StatusServiceUnavailable {
		t.Errorf("a configmap write while not ready: %d, want 503", code)
	}
	if _, err := c.EtcdClient.Put(t.Context(), key, string(original)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "readyz ok once repaired", func() (bool, error) {
		code, _, _, _ := svHTTP(t, cfg, http.MethodGet, "/readyz", nil)
		return code == http.StatusOK, nil
	})
	if code, _, _, body := svHTTP(t, cfg, http.MethodPost, "/api/v1/namespaces/default/configmaps",
		map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]interface{}{"name": "accepted"}}); code != http.StatusCreated {
		t.Errorf("a configmap write once ready: %d %s", code, body)
	}
}

// Regression (safety issue, defect 5): a StorageState's name must be <resource>.<group>
// of its spec.resource (<resource> for the core group), and its spec is immutable.
func TestStorageStateNames(t *testing.T) {
	t.Parallel()
	// The migration trigger off, so that it neither creates these StorageStates nor
	// updates them meanwhile; the definitions are installed as it would.
	c := harness.Start(t, 1, harness.WithServerOptions(func(_ int, o *controlplane.Options) { o.DisableStorageMigration = true }))
	if err := migration.EnsureCRDs(t.Context(), c.Servers[0].Config()); err != nil {
		t.Fatal(err)
	}
	dyn := c.Servers[0].Dynamic(t)
	waitFor(t, "the StorageState definition", func() (bool, error) {
		_, err := dyn.Resource(migrationapi.StorageStates).List(t.Context(), metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	for _, tc := range []struct {
		name, group, resource string
		ok                    bool
	}{
		{"wrong-name", "apps", "deployments", false},
		{"deployments", "apps", "deployments", false},
		{"deployments.apps", "apps", "deployments", true},
		{"examples", "", "examples", true},
		{"examples.core", "", "examples", false},
	} {
		_, err := createState(t, dyn, tc.name, tc.group, tc.resource)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s for %s.%s refused: %v", tc.name, tc.resource, tc.group, err)
		case !tc.ok && !apierrors.IsInvalid(err):
			t.Errorf("%s for %s.%s: %v, want 422 Invalid", tc.name, tc.resource, tc.group, err)
		case !tc.ok && !strings.Contains(err.Error(), "metadata.name must be <resource>.<group> of spec.resource"):
			t.Errorf("%s: the message does not say what is allowed: %v", tc.name, err)
		}
	}
	u, err := dyn.Resource(migrationapi.StorageStates).Get(t.Context(), "deployments.apps", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, "statefulsets", "spec", "resource", "resource"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(migrationapi.StorageStates).Update(t.Context(), u, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing spec.resource: %v, want 422 Invalid", err)
	}
}

func createState(t *testing.T, dyn dynamic.Interface, name, group, resource string) (*unstructured.Unstructured, error) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "migration.k8s.io/v1alpha1", "kind": "StorageState",
		"metadata": map[string]interface{}{"name": name},
		"spec":     map[string]interface{}{"resource": map[string]interface{}{"group": group, "resource": resource}},
	}}
	return dyn.Resource(migrationapi.StorageStates).Create(t.Context(), u, metav1.CreateOptions{})
}

// /readyz says when storage migration cannot start: a definition that takes the
// StorageState kind in migration.k8s.io keeps the StorageState definition from being
// accepted, and the storage-migration-definitions check fails with the reason until
// the conflict is gone.
func TestMigrationDefinitionsReadiness(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, harness.WithServerOptions(func(i int, o *controlplane.Options) {
		o.DisableStorageMigration = i == 0
	}))
	crds := crdClient(t, c.Servers[0]).ApiextensionsV1().CustomResourceDefinitions()
	squatter := migrationapi.StorageStateCRD()
	squatter.Name = "otherstates.migration.k8s.io"
	squatter.Spec.Names.Plural, squatter.Spec.Names.Singular = "otherstates", "otherstate"
	if _, err := crds.Create(t.Context(), squatter, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCRD(t, crdClient(t, c.Servers[0]), squatter.Name, "established", established)

	s := c.AddServer(t) // runs storage migration
	path := "/readyz/" + migration.DefinitionsCheck
	var body string
	waitFor(t, "readyz to say the definitions cannot be installed", func() (bool, error) {
		var code int
		code, _, _, body = svHTTP(t, s.Config(), http.MethodGet, path, nil)
		return code == http.StatusInternalServerError, nil
	})
	if !strings.Contains(body, "storagestates.migration.k8s.io") {
		t.Errorf("the check does not say which definition: %s", body)
	}
	if err := crds.Delete(t.Context(), squatter.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second) // the install is retried with a backoff of up to 30s
	for {
		code, _, _, body := svHTTP(t, s.Config(), http.MethodGet, "/readyz", nil)
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready once the conflict is gone: %s", body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// A definition a newer release installed (a higher definition revision) is left alone
// by an older one, so that mixed releases never take turns rewriting it; one of a lower
// revision is replaced.
func TestDefinitionRevisionNotReplaced(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, harness.WithServerOptions(func(_ int, o *controlplane.Options) { o.DisableStorageMigration = true }))
	cfg := c.Servers[0].Config()
	if err := migration.EnsureCRDs(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	crds := crdClient(t, c.Servers[0]).ApiextensionsV1().CustomResourceDefinitions()
	name := migrationapi.StorageStateCRD().Name
	rewrite := func(revision string) {
		t.Helper()
		if err := retryConflict(func() error {
			crd, err := crds.Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			crd.Annotations[migrationapi.RevisionAnnotation] = revision
			crd.Spec.Versions[0].AdditionalPrinterColumns[0].Description = "written by release " + revision
			_, err = crds.Update(t.Context(), crd, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if err := migration.EnsureCRDs(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	description := func() string {
		crd, err := crds.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return crd.Annotations[migrationapi.RevisionAnnotation] + ": " + crd.Spec.Versions[0].AdditionalPrinterColumns[0].Description
	}
	rewrite("99")
	if got := description(); got != "99: written by release 99" {
		t.Errorf("a newer release's definition was replaced: %s", got)
	}
	rewrite("1")
	ours := migrationapi.StorageStateCRD()
	if got, want := description(), ours.Annotations[migrationapi.RevisionAnnotation]+": "+ours.Spec.Versions[0].AdditionalPrinterColumns[0].Description; got != want {
		t.Errorf("an older definition was kept: %s, want %s", got, want)
	}
}
