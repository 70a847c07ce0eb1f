package safety

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/versionskew"
	"github.com/concordproject/concord/wire"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// settled reports, through s, why the fleet has not settled yet ("" once it has):
// every resource served and persisted has a StorageState whose current hash is the
// storage version hash s publishes in discovery (statesTracked), every StorageState
// persisted equals its current hash, no migration is pending or running, every
// StorageVersion has one entry per live server and a common encoding version, every
// CRD's storedVersions is its storage version alone, the VersionSkew
// report lists the live servers, and every identity lease belongs to a live server. A
// kube fleet settles as kubeSettled says.
func (f *fleet) settled(ctx context.Context, s *server) string {
	if f.kube {
		return f.kubeSettled(ctx, s)
	}
	tracked, why := f.statesPersisted(ctx, s)
	if why != "" {
		return why
	}
	if why := statesTracked(ctx, s, tracked); why != "" {
		return why
	}
	if why := f.migrationsEnded(ctx, s); why != "" {
		return why
	}
	if why := f.storageVersionsSettled(ctx, s); why != "" {
		return why
	}
	if why := crdsSettled(ctx, s); why != "" {
		return why
	}
	if why := f.versionSkewSettled(ctx, s); why != "" {
		return why
	}
	return f.leasesSettled(ctx, s)
}

// statesPersisted returns the current hash of each StorageState by name, or why one of
// them has not settled: its persisted hashes are not its current hash alone.
func (f *fleet) statesPersisted(ctx context.Context, s *server) (map[string]string, string) {
	states, err := s.dynamicClients.Resource(migrationapi.StorageStates).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err.Error()
	}
	tracked := map[string]string{}
	for _, u := range states.Items {
		var st migrationapi.StorageState
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &st); err != nil {
			return nil, err.Error()
		}
		if p := st.Status.PersistedStorageVersionHashes; len(p) != 1 || p[0] != st.Status.CurrentStorageVersionHash {
			return nil, fmt.Sprintf("StorageState %s: persisted %v, current %s", st.Name, p, st.Status.CurrentStorageVersionHash)
		}
		tracked[st.Name] = st.Status.CurrentStorageVersionHash
	}
	return tracked, ""
}

// migrationsEnded is why a migration has not ended yet ("" once none is under way).
func (f *fleet) migrationsEnded(ctx context.Context, s *server) string {
	migs, err := s.dynamicClients.Resource(migrationapi.StorageVersionMigrations).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	for i := range migs.Items {
		if !ended(&migs.Items[i]) {
			return "migration " + migs.Items[i].GetName() + " has not ended"
		}
	}
	return ""
}

// statesTracked: the storage-migration trigger keeps a StorageState of every resource
// a live server serves, can list and update, and reports a StorageVersion of, Events
// aside (they expire on their own: the trigger ignores them). A
// resource that has just become served (an emulation step serves the
// MutatingAdmissionPolicy API from 1.36) is noticed at the trigger's next discovery
// poll, up to a minute later, and migrated then: the fleet has not settled before.
// Nor has it while a state's current hash is not what the servers store in now: the
// trigger has not yet seen the change (after a roll, its new leader may wait out the
// lease of a leader killed mid-roll) and a migration is still to come.
func statesTracked(ctx context.Context, s *server, states map[string]string) string {
	svs, err := s.clients.InternalV1alpha1().StorageVersions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	reported := map[string]bool{}
	for _, sv := range svs.Items {
		reported[sv.Name] = true
	}
	return untracked(s, states, "has a StorageVersion", func(gr schema.GroupResource, _ metav1.APIResource) bool {
		return reported[wire.StorageVersionName(gr)]
	})
}

// untracked is why a resource s serves, lists and updates (Events aside) and persisted
// says is stored has no StorageState among states, or one whose current hash is not
// the storage version hash s publishes for it ("" if none); stored says how persisted
// knows.
func untracked(s *server, states map[string]string, stored string, persisted func(schema.GroupResource, metav1.APIResource) bool) string {
	lists, err := discovery.ServerPreferredResources(s.clients.Discovery())
	if err != nil {
		return "discovery: " + err.Error()
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return err.Error()
		}
		for _, r := range l.APIResources {
			gr := gv.WithResource(r.Name).GroupResource()
			if strings.Contains(r.Name, "/") || gr.Resource == "events" || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "update") || !persisted(gr, r) {
				continue
			}
			current, ok := states[migrationapi.StorageStateName(gr)]
			if !ok {
				return fmt.Sprintf("no StorageState for %s, which is served and %s", gr, stored)
			}
			if h, _ := wire.SplitStorageHash(current); r.StorageVersionHash != "" && h != r.StorageVersionHash {
				return fmt.Sprintf("StorageState %s: current hash %s, but %s stores in %s", migrationapi.StorageStateName(gr), current, s.id, r.StorageVersionHash)
			}
		}
	}
	return ""
}

// versionSkewSettled: the VersionSkew report lists exactly the live servers, with the
// versions each runs now (its controller may still be writing what happened before,
// delayed by a barrier): upgrade-check decides on it.
func (f *fleet) versionSkewSettled(ctx context.Context, s *server) string {
	u, err := s.dynamicClients.Resource(versionskew.GroupVersion.WithResource(versionskew.GroupResource.Resource)).Get(ctx, versionskew.Name, metav1.GetOptions{})
	if err != nil {
		return "VersionSkew report: " + err.Error()
	}
	var report versionskew.VersionSkew
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &report); err != nil {
		return err.Error()
	}
	var names []string
	for _, c := range report.Status.Components {
		names = append(names, c.Name)
	}
	slices.Sort(names)
	if live := f.liveIDs(); !slices.Equal(names, live) {
		return fmt.Sprintf("VersionSkew report lists %v (live %v)", names, live)
	}
	for _, c := range report.Status.Components {
		for _, srv := range f.servers {
			if srv.id != c.Name {
				continue
			}
			r := f.releaseOf(srv)
			if c.BinaryVersion != r.binary.String() || c.EmulationVersion != r.emulation.String() || c.MinCompatibilityVersion != r.minCompat.String() {
				return fmt.Sprintf("VersionSkew report says %s is binary %s, emulation %s, min compatibility %s; it runs %s, %s, %s",
					c.Name, c.BinaryVersion, c.EmulationVersion, c.MinCompatibilityVersion, r.binary, r.emulation, r.minCompat)
			}
		}
	}
	return ""
}

func ended(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]interface{})
		if (m["type"] == "Succeeded" || m["type"] == "Failed") && m["status"] == "True" {
			return true
		}
	}
	return false
}

func (f *fleet) storageVersionsSettled(ctx context.Context, s *server) string {
	svs, err := s.clients.InternalV1alpha1().StorageVersions().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	live := f.liveIDs()
	var why []string
	for _, sv := range svs.Items {
		var ids []string
		for _, e := range sv.Status.StorageVersions {
			ids = append(ids, e.APIServerID)
		}
		slices.Sort(ids)
		if !slices.Equal(ids, live) || sv.Status.CommonEncodingVersion == nil {
			why = append(why, fmt.Sprintf("StorageVersion %s: entries of %v (live %v), common set %v", sv.Name, ids, live, sv.Status.CommonEncodingVersion != nil))
		}
	}
	return strings.Join(why, "; ")
}

func crdsSettled(ctx context.Context, s *server) string {
	list, err := s.dynamicClients.Resource(apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	for _, u := range list.Items {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
			return err.Error()
		}
		for _, v := range crd.Spec.Versions {
			if v.Storage && !slices.Equal(crd.Status.StoredVersions, []string{v.Name}) {
				return fmt.Sprintf("CRD %s: storedVersions %v, storage %s", crd.Name, crd.Status.StoredVersions, v.Name)
			}
		}
	}
	return ""
}

func (f *fleet) leasesSettled(ctx context.Context, s *server) string {
	leases, err := s.clients.CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "apiserver.kubernetes.io/identity"})
	if err != nil {
		return err.Error()
	}
	for _, l := range leases.Items {
		if !f.isLive(l.Name) {
			return "identity lease of " + l.Name + ", which is not running"
		}
	}
	return ""
}

// quiesce waits until the fleet has settled, then checks that it stays quiet, that
// every custom resource is stored in its storage version, that every live server is
// ready and accepts a write, and reads every object at the end.
func (f *fleet) quiesce(t *testing.T) {
	t.Helper()
	s := f.randomLive(f.rng)
	why := "not checked"
	f.settleFrom = time.Now()
	deadline := f.settleFrom.Add(f.settleWithin)
	for why != "" {
		if time.Now().After(deadline) {
			f.anomaly("not settled within %v: %s", f.settleWithin, why)
			return
		}
		ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
		why = f.settled(ctx, s)
		cancel()
		if why != "" {
			time.Sleep(250 * time.Millisecond)
		}
	}
	f.checkQuiet(t, 3*time.Second)
	f.storedInStorageVersion(t.Context(), s)
	for _, s := range f.servers {
		if !s.live() {
			continue
		}
		if err := s.ready(t); err != nil {
			f.anomaly("%s settled but not ready: %v", s.id, err)
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "ready-"}}
		if _, err := s.clients.CoreV1().ConfigMaps(namespace).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			f.anomaly("%s is ready but refuses a write: %v", s.id, err)
		}
	}
	f.finalReads(t)
}

// checkQuiet watches etcd for d: a settled fleet writes no object twice, leases (of
// any kind) and Events aside.
func (f *fleet) checkQuiet(t *testing.T, d time.Duration) {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	writes := map[string]int{}
	for resp := range f.etcd.Watch(ctx, "/registry/", clientv3.WithPrefix()) {
		for _, ev := range resp.Events {
			key := string(ev.Kv.Key)
			// Leases of every kind (kube-apiserver's peerserverleases too) are renewed.
			if !strings.Contains(key, "leases/") && !strings.Contains(key, "/events/") {
				writes[key]++
			}
		}
	}
	for key, n := range writes {
		if n > 1 {
			f.anomaly("a settled fleet wrote %s %d times in %v", key, n, d)
		}
	}
}

// storageVersionsOf returns the StorageVersion status of name as etcd holds it.
func (f *fleet) storageVersionOf(t *testing.T, name string) svStatus {
	resp, err := f.etcd.Get(t.Context(), "/registry/internal.apiserver.k8s.io/storageversions/"+name)
	var obj struct {
		Status svStatus `json:"status"`
	}
	if err == nil && len(resp.Kvs) == 1 {
		_ = json.Unmarshal(resp.Kvs[0].Value, &obj)
	}
	return obj.Status
}
