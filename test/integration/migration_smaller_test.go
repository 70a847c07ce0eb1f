package integration

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/migration"
	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/migration/controller"
	"github.com/concordproject/concord/migration/migrator"
	"github.com/concordproject/concord/upgradecheck"
	"github.com/concordproject/concord/wire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// storageStateObject is a StorageState named name about group/resource.
func storageStateObject(name, group, resource string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": migrationapi.StorageStates.GroupVersion().String(), "kind": "StorageState",
		"metadata": map[string]interface{}{"name": name},
		"spec":     map[string]interface{}{"resource": map[string]interface{}{"group": group, "resource": resource}},
	}}
}

// wantInvalidCauses checks that err is a 422 Invalid metav1.Status whose causes are exactly
// the fields want, each with a message containing its value in want.
func wantInvalidCauses(t *testing.T, what string, err error, want map[string]string) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != 422 || status.Status().Reason != metav1.StatusReasonInvalid {
		t.Fatalf("%s: %v, want a 422 Invalid", what, err)
	}
	got := map[string]string{}
	for _, c := range status.Status().Details.Causes {
		got[c.Field] = c.Message
	}
	for f, msg := range want {
		if m, ok := got[f]; !ok || !strings.Contains(m, msg) {
			t.Errorf("%s: causes %v, want one of field %q saying %q", what, status.Status().Details.Causes, f, msg)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: causes %v, want only %v", what, status.Status().Details.Causes, want)
	}
}

// Issue 31, item 1: a StorageState whose name is not its resource's, or whose spec
// changes, is refused with a 422 naming the field (metadata.name, spec); a status of
// the wrong shape is refused with a 422 naming the entry.
func TestStorageStateValidationNamesFields(t *testing.T) {
	t.Parallel()
	c := startMigrationCluster(t, 1)
	s := c.Servers[0]
	if err := migration.EnsureCRDs(t.Context(), s.Config()); err != nil {
		t.Fatal(err)
	}
	states := s.Dynamic(t).Resource(migrationapi.StorageStates)

	_, err := states.Create(t.Context(), storageStateObject("wrong", "apps", "deployments"), metav1.CreateOptions{})
	wantInvalidCauses(t, "a misnamed state", err, map[string]string{"metadata.name": "must be <resource>.<group> of spec.resource (<resource> for the core group): deployments.apps"})

	created, err := states.Create(t.Context(), storageStateObject("configmaps", "", "configmaps"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	moved := created.DeepCopy()
	_ = unstructured.SetNestedField(moved.Object, "secrets", "spec", "resource", "resource")
	_, err = states.Update(t.Context(), moved, metav1.UpdateOptions{})
	wantInvalidCauses(t, "a changed spec", err, map[string]string{"spec": "spec is immutable", "metadata.name": "must be <resource>.<group>"})

	bad := created.DeepCopy()
	bad.Object["status"] = map[string]interface{}{"persistedStorageVersionHashes": []interface{}{int64(1)}, "currentStorageVersionHash": "x"}
	_, err = states.UpdateStatus(t.Context(), bad, metav1.UpdateOptions{})
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Code != 422 || status.Status().Reason != metav1.StatusReasonInvalid {
		t.Fatalf("a malformed status: %v, want a 422 Invalid", err)
	}
	if !slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool {
		return c.Field == "status.persistedStorageVersionHashes[0]" && c.Type == metav1.CauseTypeTypeInvalid
	}) {
		t.Errorf("a malformed status: causes %v, want a type error of status.persistedStorageVersionHashes[0]", status.Status().Details.Causes)
	}
}

// waitTracked waits until the StorageState of gr has a Tracked condition of status
// and reason, and returns the state.
func waitTracked(t *testing.T, dyn dynamic.Interface, gr schema.GroupResource, status metav1.ConditionStatus, reason string) *migrationapi.StorageState {
	t.Helper()
	var st *migrationapi.StorageState
	waitFor(t, fmt.Sprintf("%s Tracked=%s (%s)", migrationapi.StorageStateName(gr), status, reason), func() (bool, error) {
		st = getState(t, dyn, gr)
		if st == nil {
			return false, nil
		}
		for _, c := range st.Status.Conditions {
			if c.Type == migrationapi.ConditionTracked {
				return c.Status == status && c.Reason == reason, nil
			}
		}
		return false, nil
	})
	return st
}

// Issue 31, item 2: a StorageState a user creates for a resource no server serves is
// kept, its Tracked condition False saying why, and is tracked (migrated from
// "Unknown") once the resource is served; when the resource goes away again the
// user's state stays, while one the trigger created is deleted.
func TestStorageStateForUnservedResourceIsKept(t *testing.T) {
	t.Parallel()
	c := startMigrationCluster(t, 1)
	s := c.Servers[0]
	dyn := s.Dynamic(t)
	gr := schema.GroupResource{Group: "idle.example.com", Resource: "widgets"}
	// The trigger leaves the built-in resources alone (their first sweep is no part of
	// this story), and follows the two definitions created below.
	if err := migration.EnsureCRDs(t.Context(), s.Config()); err != nil {
		t.Fatal(err)
	}
	runControllers(t, only(fastConfig(s.Config(), nil), s, gr))
	name := migrationapi.StorageStateName(gr)
	mine, err := dyn.Resource(migrationapi.StorageStates).Create(t.Context(), storageStateObject(name, gr.Group, gr.Resource), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := waitTracked(t, dyn, gr, metav1.ConditionFalse, migrationapi.ReasonResourceNotServed)
	if c := st.Status.Conditions[0]; !strings.Contains(c.Message, "No API server serves "+name) {
		t.Errorf("Tracked condition %+v does not say the resource is not served", c)
	}
	if st.UID != mine.GetUID() || len(st.Status.PersistedStorageVersionHashes) != 0 {
		t.Errorf("the idle state was replaced or given hashes: %+v", st)
	}

	// The resource is served: the state is tracked, its objects migrated from Unknown.
	e := newMigrationEnv(t, c, gr.Group, "v1")
	waitPersisted(t, dyn, gr, e.hash("v1"), e.hash("v1"))
	if st := waitTracked(t, dyn, gr, metav1.ConditionTrue, migrationapi.ReasonResourceTracked); st.UID != mine.GetUID() {
		t.Errorf("the state was replaced: uid %s, want %s", st.UID, mine.GetUID())
	}

	// Another resource, whose state the trigger creates.
	other := newMigrationEnv(t, c, "gone.example.com", "v1")
	waitPersisted(t, dyn, other.gr, other.hash("v1"), other.hash("v1"))
	if l := getState(t, dyn, other.gr).Labels[migrationapi.LabelManagedBy]; l != migrationapi.FieldManager {
		t.Errorf("the trigger's state is labelled %s=%q", migrationapi.LabelManagedBy, l)
	}

	// Both resources go away: the trigger's state goes with its resource, the user's
	// stays, idle.
	crds := crdClient(t, s).ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range []string{e.crd.Name, other.crd.Name} {
		if err := crds.Delete(t.Context(), crd, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the trigger's state of a deleted resource to be deleted", func() (bool, error) {
		return getState(t, dyn, other.gr) == nil, nil
	})
	if st := waitTracked(t, dyn, gr, metav1.ConditionFalse, migrationapi.ReasonResourceNotServed); st.UID != mine.GetUID() {
		t.Errorf("the user's state was replaced: uid %s, want %s", st.UID, mine.GetUID())
	}
}

// manifestMigration returns the StorageVersionMigration that `concord upgrade-check`
// prints to unblock gr, as `kubectl create -f` would read it.
func manifestMigration(t *testing.T, gr schema.GroupResource) *unstructured.Unstructured {
	t.Helper()
	text := upgradecheck.Manifest(&upgradecheck.Verdict{Resource: gr})
	_, body, ok := strings.Cut(text, "<<EOF\n")
	body, _, ok2 := strings.Cut(body, "\nEOF")
	if !ok || !ok2 {
		t.Fatalf("the manifest is not a here-document:\n%s", text)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(body), &u.Object); err != nil {
		t.Fatalf("the manifest is not YAML: %v\n%s", err, body)
	}
	return u
}

// Issue 31, item 4: the trigger's migration failed on an object the new version
// refuses, and it waits an hour before it tries again. The object is fixed, and the
// migration `concord upgrade-check` prints is created by hand: the trigger adopts it,
// and its success, not a migration of the trigger's, leaves the StorageState with the
// current hash alone.
func TestHandMadeMigrationUnblocks(t *testing.T) {
	t.Parallel()
	c := startMigrationCluster(t, 1)
	s := c.Servers[0]
	dyn := s.Dynamic(t)
	e := newMigrationEnv(t, c, "unblock.example.com", "v1")
	const n = 30
	e.seed("w", "v1", n, 1)
	e.seed("bad", "v1", 1, -1)
	e.flip("v2")
	cfg := only(fastConfig(s.Config(), nil), s, e.gr)
	cfg.RetryFailedAfter = time.Hour
	runControllers(t, cfg)
	h2 := e.hash("v2")

	failed := waitMigration(t, dyn, e.gr, 1, "to fail on the bad object", phase(migrationapi.ConditionFailed))
	if c := findMigrationCondition(failed, migrationapi.ConditionFailed); c.Reason != migrationapi.ReasonObjectsFailed {
		t.Fatalf("migration 1 failed with %s: %s", c.Reason, c.Message)
	}
	waitPersisted(t, dyn, e.gr, h2, migrationapi.Unknown)
	if err := dyn.Resource(e.gvr("v2")).Namespace("default").Delete(t.Context(), "bad-0000", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	m := manifestMigration(t, e.gr)
	if m.GetGenerateName() != migrationapi.StorageStateName(e.gr)+"-" || m.GetName() != "" {
		t.Fatalf("the manifest's metadata is %v", m.Object["metadata"])
	}
	created, err := dyn.Resource(migrationapi.StorageVersionMigrations).Create(t.Context(), m, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var byHand *migrationapi.StorageVersionMigration
	waitMigrating(t, dyn, created.GetName()+" to succeed", func() (bool, error) {
		u, err := dyn.Resource(migrationapi.StorageVersionMigrations).Get(t.Context(), created.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if byHand, err = migrationapi.MigrationFrom(u); err != nil {
			return false, err
		}
		return byHand.Phase() == migrationapi.ConditionSucceeded, nil
	})
	waitPersisted(t, dyn, e.gr, h2, h2)

	// The controller may end it before the trigger adopts it, and the trigger's
	// adoption and its StorageState write are two writes: wait for the adoption.
	adopted := func(a map[string]string) bool {
		return a[migrationapi.AnnotationStorageVersionHash] == h2 && a[migrationapi.AnnotationSequence] == "2" &&
			a[migrationapi.AnnotationStorageVersionResourceVersion] != ""
	}
	waitFor(t, "the migration by hand to be adopted as the trigger's second", func() (bool, error) {
		u, err := dyn.Resource(migrationapi.StorageVersionMigrations).Get(t.Context(), created.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if byHand, err = migrationapi.MigrationFrom(u); err != nil {
			return false, err
		}
		return adopted(byHand.Annotations), nil
	})
	if migs := migrationsOf(t, dyn, e.gr); len(migs) != 2 {
		names := make([]string, len(migs))
		for i, m := range migs {
			names[i] = m.Name + "=" + m.Phase()
		}
		t.Errorf("migrations %v: want the trigger's failed one and the one by hand, nothing more", names)
	}
	if got := e.encodings(); got[e.gr.Group+"/v2"] != n || len(got) != 1 {
		t.Errorf("etcd holds %v, want all %d in v2", got, n)
	}
}

// heldMigration seeds n widgets of group in v1 on a server of its own, flips the
// storage version to v2, and runs the controllers until the trigger's first migration
// has rewritten 10 of them; gate then holds its next rewrites until released.
func heldMigration(t *testing.T, group string, n int) (*migrationEnv, *writeGate, *migrationapi.StorageVersionMigration) {
	t.Helper()
	c := startMigrationCluster(t, 1)
	s := c.Servers[0]
	e := newMigrationEnv(t, c, group, "v1")
	e.seed("w", "v1", n, 1)
	e.flip("v2")
	gate := &writeGate{}
	gate.hold(10)
	cfg := only(fastConfig(gate.wrap(s.Config()), nil), s, e.gr)
	cfg.Migrator = migrator.Options{Mode: migrator.ModeClient, PageSize: 10, Concurrency: 1}
	runControllers(t, cfg)
	return e, gate, waitMigration(t, s.Dynamic(t), e.gr, 1, "to run", migrated(10))
}

// Issue 31, item 3: a migration the trigger aborts (here the storage version changed
// while it ran) is marked Failed with the reason, not deleted: the same object (same
// UID) stays, and a new migration, under a new name, replaces it.
func TestAbortedMigrationIsKept(t *testing.T) {
	t.Parallel()
	const n = 60
	e, gate, first := heldMigration(t, "aborted.example.com", n)
	dyn := e.c.Servers[0].Dynamic(t)

	e.flip("v1")
	aborted := waitMigration(t, dyn, e.gr, 1, "to be aborted", phase(migrationapi.ConditionFailed))
	gate.release()
	if aborted.UID != first.UID {
		t.Errorf("migration 1 was replaced (uid %s, then %s)", first.UID, aborted.UID)
	}
	if c := findMigrationCondition(aborted, migrationapi.ConditionFailed); c.Reason != migrationapi.ReasonStorageVersionChanged || c.Message == "" {
		t.Errorf("migration 1 failed with %q: %q, want %s and why", c.Reason, c.Message, migrationapi.ReasonStorageVersionChanged)
	}
	waitMigration(t, dyn, e.gr, 2, "to succeed", phase(migrationapi.ConditionSucceeded))
	waitPersisted(t, dyn, e.gr, e.hash("v1"), e.hash("v1"))
	u, err := dyn.Resource(migrationapi.StorageVersionMigrations).Get(t.Context(), first.Name, metav1.GetOptions{})
	if err != nil || u.GetUID() != first.UID {
		t.Errorf("the aborted migration is gone once its replacement succeeded: %v", err)
	}
	if got := e.encodings(); got[e.gr.Group+"/v1"] != n || len(got) != 1 {
		t.Errorf("etcd holds %v, want all %d in v1", got, n)
	}
}

// A change of the StorageVersion object that every server agrees through (a server of
// the same release joins: its entry moves the object's resourceVersion) does not
// restart the trigger's migration: the trigger keeps it (guard.Carried), the
// controller moves its guard to the new resourceVersion when its rewrites meet the
// change, and the one migration ends Succeeded and settles the state; no second
// migration is launched.
func TestMigrationCarriedOverAnAgreeingChange(t *testing.T) {
	t.Parallel()
	const n = 60
	e, gate, first := heldMigration(t, "carried.example.com", n)
	s := e.c.Servers[0]
	dyn := s.Dynamic(t)
	startedAt := first.Annotations[migrationapi.AnnotationStorageVersionResourceVersion]

	fakeServers(t, s, e.gr, map[string]string{"fake-same-release": "v2"})
	changed := storageVersionRevision(t, e)
	gate.release()
	done := waitMigration(t, dyn, e.gr, 1, "to succeed", phase(migrationapi.ConditionSucceeded))
	waitPersisted(t, dyn, e.gr, e.hash("v2"), e.hash("v2"))
	if done.UID != first.UID {
		t.Errorf("migration 1 was replaced (uid %s, then %s)", first.UID, done.UID)
	}
	if got := done.Annotations[migrationapi.AnnotationStorageVersionResourceVersion]; rvNumber(t, got) < changed {
		t.Errorf("migration 1's guard at resourceVersion %s (started at %s), want it moved to %d or later", got, startedAt, changed)
	}
	if migs := migrationsOf(t, dyn, e.gr); len(migs) != 1 {
		t.Errorf("%d migrations of %s, want the one that was carried", len(migs), e.gr)
	}
	if got := e.encodings(); got[e.gr.Group+"/v2"] != n || len(got) != 1 {
		t.Errorf("etcd holds %v, want all %d in v2", got, n)
	}
	waitFor(t, "the Event that says the guard moved", func() (bool, error) {
		evs, err := s.Clientset(t).EventsV1().Events("default").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, ev := range evs.Items {
			if ev.Regarding.Name == first.Name && ev.Reason == controller.EventGuardMoved && strings.Contains(ev.Note, startedAt) {
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("guard moved from resourceVersion %s to %s", startedAt, done.Annotations[migrationapi.AnnotationStorageVersionResourceVersion])
}

// Issue 31, item 5: StorageVersionMigrations are stored as storagemigration.k8s.io/v1
// by every release, 1.37 and 1.36 alike (Concord's own definition, which does not
// follow the compatibility window): both servers report v1 in the StorageVersion and
// in discovery's storageVersionHash, and what either writes is v1 in etcd.
func TestStorageVersionMigrationsStoredAsV1(t *testing.T) {
	t.Parallel()
	older, newer := releases(t)
	c := harness.Start(t, 2, harness.WithServerOptions(func(i int, o *controlplane.Options) {
		o.DisableStorageMigration = true
		if i == 1 {
			o.Compatibility.BinaryVersion = older
		}
	}))
	gr := migrationapi.StorageVersionMigrations.GroupResource()
	const v1 = "storagemigration.k8s.io/v1"
	waitFor(t, "both servers' StorageVersion entries of "+gr.String(), func() (bool, error) {
		u, err := c.Servers[0].Dynamic(t).Resource(migrationapi.StorageVersions).Get(t.Context(), wire.StorageVersionName(gr), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		common, _, _ := unstructured.NestedString(u.Object, "status", "commonEncodingVersion")
		entries, _, _ := unstructured.NestedSlice(u.Object, "status", "storageVersions")
		for _, e := range entries {
			if v, _ := e.(map[string]interface{})["encodingVersion"].(string); v != v1 {
				t.Fatalf("a server of %s or %s encodes in %s: %v", newer, older, v, entries)
			}
		}
		return len(entries) == 2 && common == v1, nil
	})
	want := wire.StorageVersionHash(gr.Group, "v1", "StorageVersionMigration")
	for _, s := range c.Servers {
		list, err := s.Clientset(t).Discovery().ServerResourcesForGroupVersion(v1)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gr.Resource })
		if i < 0 || list.APIResources[i].StorageVersionHash != want {
			t.Errorf("server %d: storageVersionHash of %s is not v1's (%s): %+v", s.Index, gr, want, list.APIResources)
		}
		name := fmt.Sprintf("stored-by-%d", s.Index)
		m := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": v1, "kind": "StorageVersionMigration",
			"metadata": map[string]interface{}{"name": name}, "spec": map[string]interface{}{"resource": map[string]interface{}{"resource": "configmaps"}}}}
		if _, err := s.Dynamic(t).Resource(migrationapi.StorageVersionMigrations).Create(t.Context(), m, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := etcdEncodings(t, c.EtcdClient, "/registry/"+gr.Group+"/"+gr.Resource+"/"); got[v1] != 2 || len(got) != 1 {
		t.Errorf("etcd holds the migrations as %v, want both in %s", got, v1)
	}
}
