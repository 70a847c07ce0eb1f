package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/test/progress"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// gcCM returns a ConfigMap named name in ns with owners, and finalizers.
func gcCM(ns, name string, owners []metav1.OwnerReference, finalizers ...string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners, Finalizers: finalizers}}
}

// ownedBy returns the reference to obj (of apiVersion and kind), blocking its owner's
// foreground deletion if block.
func ownedBy(obj metav1.Object, apiVersion, kind string, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), UID: obj.GetUID(), BlockOwnerDeletion: ptr.To(block)}
}

// cmOwnedBy is ownedBy for a ConfigMap owner.
func cmOwnedBy(owner *corev1.ConfigMap, block bool) []metav1.OwnerReference {
	return []metav1.OwnerReference{ownedBy(owner, "v1", "ConfigMap", block)}
}

// createCM creates cm through cs.
func createCM(t *testing.T, cs kubernetes.Interface, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	out, err := cs.CoreV1().ConfigMaps(cm.Namespace).Create(t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating configmap %s/%s: %v", cm.Namespace, cm.Name, err)
	}
	return out
}

// gcNamespace creates a namespace for one subtest.
func gcNamespace(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

// cmGone reports whether ns/name is gone, or (with uid) replaced by another object.
func cmGone(ctx context.Context, cs kubernetes.Interface, ns, name string, uid types.UID) (bool, error) {
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return uid != "" && cm.UID != uid, nil
}

// waitCMsGone waits until every ConfigMap of cms is gone.
func waitCMsGone(t *testing.T, cs kubernetes.Interface, cms ...*corev1.ConfigMap) {
	t.Helper()
	for _, cm := range cms {
		waitFor(t, fmt.Sprintf("configmap %s/%s collected", cm.Namespace, cm.Name), func() (bool, error) {
			return cmGone(t.Context(), cs, cm.Namespace, cm.Name, cm.UID)
		})
	}
}

// getCM reads ns/name, failing the test if it is gone.
func getCM(t *testing.T, cs kubernetes.Interface, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("configmap %s/%s: %v", ns, name, err)
	}
	return cm
}

// waitOrphaned waits until dep no longer names owner, failing if dep is deleted or
// replaced meanwhile. A dependent the collector learned of late (its monitor behind
// the owner's) loses its reference only once the owner is gone.
func waitOrphaned(t *testing.T, cs kubernetes.Interface, dep *corev1.ConfigMap, owner types.UID) {
	t.Helper()
	waitFor(t, dep.Name+" orphaned", func() (bool, error) {
		got := getCM(t, cs, dep.Namespace, dep.Name)
		if got.UID != dep.UID || got.DeletionTimestamp != nil {
			return false, fmt.Errorf("%s: uid %s (was %s), deletionTimestamp %v, owners %+v, want it kept", dep.Name, got.UID, dep.UID, got.DeletionTimestamp, got.OwnerReferences)
		}
		return !namesOwner(got, owner), nil
	})
}

func namesOwner(cm *corev1.ConfigMap, uid types.UID) bool {
	return slices.ContainsFunc(cm.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == uid })
}

// Deletion by ownerReferences through two servers sharing one etcd, one leading the
// garbage collector: every propagation policy, the legacy orphanDependents, and the
// references Kubernetes' garbage collector resolves or does not.
func TestGarbageCollection(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	cs0, cs1 := c.Servers[0].Clientset(t), c.Servers[1].Clientset(t)
	// A dependent of a kind no server serves yet (the custom resources' below): kept
	// until it is served, then collected (its owner does not exist).
	early := createCM(t, cs0, gcCM("default", "of-unserved-kind", []metav1.OwnerReference{{APIVersion: "gc.example.com/v1", Kind: "Widget", Name: "w", UID: "00000000-0000-0000-0000-0000000000bb"}}))

	t.Run("background", func(t *testing.T) {
		ns := gcNamespace(t, cs0, "gc-background")
		owner := createCM(t, cs0, gcCM(ns, "owner", nil))
		var deps []*corev1.ConfigMap
		for i := range 3 {
			deps = append(deps, createCM(t, cs1, gcCM(ns, fmt.Sprint("dep-", i), cmOwnedBy(owner, i == 0))))
		}
		bystander := createCM(t, cs0, gcCM(ns, "bystander", nil))
		if err := cs1.CoreV1().ConfigMaps(ns).Delete(t.Context(), "owner", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs0.CoreV1().ConfigMaps(ns).Get(t.Context(), "owner", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the owner deleted in the background (the default) is still there: %v", err)
		}
		waitCMsGone(t, cs0, deps...)
		getCM(t, cs0, ns, bystander.Name)
	})

	t.Run("foreground", func(t *testing.T) {
		ns := gcNamespace(t, cs0, "gc-foreground")
		owner := createCM(t, cs0, gcCM(ns, "owner", nil))
		// blocker blocks the owner's deletion and is held by a finalizer of its own;
		// free does not block it; shared has a live owner too, and survives.
		blocker := createCM(t, cs0, gcCM(ns, "blocker", cmOwnedBy(owner, true), "example.com/hold"))
		free := createCM(t, cs0, gcCM(ns, "free", cmOwnedBy(owner, false)))
		live := createCM(t, cs0, gcCM(ns, "live", nil))
		shared := createCM(t, cs0, gcCM(ns, "shared", append(cmOwnedBy(owner, true), cmOwnedBy(live, true)...)))
		fg := metav1.DeletePropagationForeground
		if err := cs1.CoreV1().ConfigMaps(ns).Delete(t.Context(), "owner", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
			t.Fatal(err)
		}
		got := getCM(t, cs0, ns, "owner")
		// Marking it deleting bumps a generation it has (kube gives ConfigMaps none).
		wantGeneration := owner.Generation
		if wantGeneration > 0 {
			wantGeneration++
		}
		if got.DeletionTimestamp == nil || !slices.Equal(got.Finalizers, []string{metav1.FinalizerDeleteDependents}) || got.Generation != wantGeneration {
			t.Fatalf("owner deleted in the foreground: deletionTimestamp %v, finalizers %v, generation %d (was %d)", got.DeletionTimestamp, got.Finalizers, got.Generation, owner.Generation)
		}
		// Namespaces, deleted their own way, keep theirs (as in Kubernetes, which gives
		// them none).
		gcNamespace(t, cs0, "gc-generation")
		ns0 := &corev1.Namespace{}
		if err := cs0.CoreV1().RESTClient().Delete().Resource("namespaces").Name("gc-generation").Do(t.Context()).Into(ns0); err != nil {
			t.Fatal(err)
		}
		if ns0.DeletionTimestamp == nil || ns0.Generation != 0 {
			t.Errorf("deleted namespace: deletionTimestamp %v, generation %d, want none", ns0.DeletionTimestamp, ns0.Generation)
		}
		waitCMsGone(t, cs0, free)
		waitFor(t, "the blocking dependent being deleted", func() (bool, error) {
			return getCM(t, cs0, ns, "blocker").DeletionTimestamp != nil, nil
		})
		if got := getCM(t, cs0, ns, "owner"); !slices.Equal(got.Finalizers, []string{metav1.FinalizerDeleteDependents}) {
			t.Fatalf("owner while a blocking dependent remains: finalizers %v", got.Finalizers)
		}
		releaseCM(t, cs1, ns, "blocker")
		waitCMsGone(t, cs0, blocker, owner)
		if got := getCM(t, cs0, ns, "shared"); got.UID != shared.UID || got.DeletionTimestamp != nil || namesOwner(got, owner.UID) || !namesOwner(got, live.UID) {
			t.Errorf("the dependent with a live owner too: %+v", got.ObjectMeta)
		}

		// A dependent that does not block leaves its owner free to go, and is deleted.
		owner = createCM(t, cs0, gcCM(ns, "owner2", nil))
		held := createCM(t, cs0, gcCM(ns, "held", cmOwnedBy(owner, false), "example.com/hold"))
		if err := cs0.CoreV1().ConfigMaps(ns).Delete(t.Context(), "owner2", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
			t.Fatal(err)
		}
		waitCMsGone(t, cs0, owner)
		waitFor(t, "the non-blocking dependent being deleted", func() (bool, error) {
			return getCM(t, cs0, ns, "held").DeletionTimestamp != nil, nil
		})
		releaseCM(t, cs0, ns, "held")
		waitCMsGone(t, cs0, held)
	})

	t.Run("orphan", func(t *testing.T) {
		ns := gcNamespace(t, cs0, "gc-orphan")
		orphan := metav1.DeletePropagationOrphan
		yes, no := true, false
		for _, tc := range []struct {
			name string
			opts metav1.DeleteOptions
		}{
			{"policy", metav1.DeleteOptions{PropagationPolicy: &orphan}},
			{"legacy", metav1.DeleteOptions{OrphanDependents: &yes}}, //nolint:staticcheck // SA1019: the deprecated option is tested
		} {
			owner := createCM(t, cs0, gcCM(ns, tc.name, nil))
			other := createCM(t, cs0, gcCM(ns, tc.name+"-other", nil))
			owners := append(cmOwnedBy(owner, true), ownedBy(other, "v1", "ConfigMap", false))
			deps := []*corev1.ConfigMap{
				createCM(t, cs1, gcCM(ns, tc.name+"-dep", cmOwnedBy(owner, true))),
				createCM(t, cs1, gcCM(ns, tc.name+"-two-owners", owners)),
			}
			res := cs1.CoreV1().RESTClient().Delete().Namespace(ns).Resource("configmaps").Name(tc.name).Body(&tc.opts).Do(t.Context())
			var code int
			res.StatusCode(&code)
			deleted := &corev1.ConfigMap{}
			if err := res.Into(deleted); err != nil || code != 200 {
				t.Fatalf("%s: delete answered %d: %v", tc.name, code, err)
			}
			if deleted.DeletionTimestamp == nil || !slices.Contains(deleted.Finalizers, metav1.FinalizerOrphanDependents) {
				t.Fatalf("%s: the deletion answered deletionTimestamp %v, finalizers %v", tc.name, deleted.DeletionTimestamp, deleted.Finalizers)
			}
			waitCMsGone(t, cs0, owner)
			for _, dep := range deps {
				waitOrphaned(t, cs0, dep, owner.UID)
			}
			if got := getCM(t, cs0, ns, tc.name+"-two-owners"); !namesOwner(got, other.UID) {
				t.Errorf("%s: the orphaned dependent lost its other owner: %+v", tc.name, got.OwnerReferences)
			}
		}

		// orphanDependents=false is the background: Kubernetes answers 202 while the
		// object waits, here for a finalizer of its own.
		owner := createCM(t, cs0, gcCM(ns, "accepted", nil, "example.com/hold"))
		dep := createCM(t, cs0, gcCM(ns, "accepted-dep", cmOwnedBy(owner, false)))
		var code int
		legacy := &metav1.DeleteOptions{OrphanDependents: &no} //nolint:staticcheck // SA1019: the deprecated option is tested
		cs0.CoreV1().RESTClient().Delete().Namespace(ns).Resource("configmaps").Name("accepted").Body(legacy).Do(t.Context()).StatusCode(&code)
		if code != 202 {
			t.Errorf("orphanDependents=false of an object held by a finalizer answered %d, want 202", code)
		}
		if got := getCM(t, cs0, ns, "accepted"); !slices.Equal(got.Finalizers, []string{"example.com/hold"}) {
			t.Errorf("finalizers after orphanDependents=false: %v", got.Finalizers)
		}
		releaseCM(t, cs0, ns, "accepted")
		waitCMsGone(t, cs0, owner, dep)

		// A reference made after the orphaning is done (here while the owner waits for
		// a finalizer of its own) names an owner that goes without orphaning it: the
		// dependent is collected, as in Kubernetes. (The collector removes, instead, a
		// reference that existed when it finished orphaning but that it learned of
		// late, a monitor lagging behind another.)
		owner = createCM(t, cs0, gcCM(ns, "late", nil, "example.com/hold"))
		if err := cs1.CoreV1().ConfigMaps(ns).Delete(t.Context(), "late", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the orphaning of late's dependents", func() (bool, error) {
			return slices.Equal(getCM(t, cs0, ns, "late").Finalizers, []string{"example.com/hold"}), nil
		})
		dep = createCM(t, cs1, gcCM(ns, "late-dep", cmOwnedBy(owner, false)))
		releaseCM(t, cs0, ns, "late")
		waitCMsGone(t, cs0, owner, dep)
	})

	t.Run("invalid options", func(t *testing.T) {
		yes := true
		orphan, bogus := metav1.DeletePropagationOrphan, metav1.DeletionPropagation("Sideways")
		both := metav1.DeleteOptions{OrphanDependents: &yes, PropagationPolicy: &orphan} //nolint:staticcheck // SA1019: the deprecated option is tested
		for _, tc := range []struct {
			opts metav1.DeleteOptions
			want string
		}{
			{both, `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: "Orphan": orphanDependents and deletionPropagation cannot be both set`},
			{metav1.DeleteOptions{PropagationPolicy: &bogus}, `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"`},
		} {
			// Refused before the object is even looked up, as in Kubernetes.
			err := cs0.CoreV1().ConfigMaps("default").Delete(t.Context(), "no-such-object", tc.opts)
			if !apierrors.IsInvalid(err) || err.Error() != tc.want {
				t.Errorf("delete with %+v: %v, want 422 %q", tc.opts, err, tc.want)
			}
			err = cs1.CoreV1().ConfigMaps("default").DeleteCollection(t.Context(), tc.opts, metav1.ListOptions{LabelSelector: "none=none"})
			if !apierrors.IsInvalid(err) {
				t.Errorf("deletecollection with %+v: %v, want 422", tc.opts, err)
			}
		}
	})

	t.Run("owners", func(t *testing.T) {
		ns := gcNamespace(t, cs0, "gc-owners")
		a := createCM(t, cs0, gcCM(ns, "a", nil))
		b := createCM(t, cs0, gcCM(ns, "b", nil))
		// Two owners: the deletion of one leaves it, without the reference.
		both := createCM(t, cs0, gcCM(ns, "both", append(cmOwnedBy(a, true), cmOwnedBy(b, true)...)))
		// An owner that never existed.
		never := createCM(t, cs0, gcCM(ns, "never", []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "00000000-0000-0000-0000-00000000dead"}}))
		// An owner deleted and created again with the same name: another uid.
		c := createCM(t, cs0, gcCM(ns, "c", nil))
		recreated := createCM(t, cs0, gcCM(ns, "recreated", cmOwnedBy(c, false)))
		if err := cs1.CoreV1().ConfigMaps(ns).Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		orphan := metav1.DeletePropagationOrphan
		if err := cs1.CoreV1().ConfigMaps(ns).Delete(t.Context(), "c", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
			t.Fatal(err)
		}
		waitCMsGone(t, cs0, c)
		waitOrphaned(t, cs0, recreated, c.UID)
		// c's dependent is orphaned: give it its reference back, to c's old uid, once
		// a new c exists.
		c2 := createCM(t, cs0, gcCM(ns, "c", nil))
		cms := cs0.CoreV1().ConfigMaps(ns)
		if _, err := updateRetrying(t.Context(), cms.Get, cms.Update, "recreated", func(cur *corev1.ConfigMap) {
			cur.OwnerReferences = cmOwnedBy(c, false)
		}); err != nil {
			t.Fatal(err)
		}
		waitCMsGone(t, cs0, never, recreated)
		waitFor(t, "the dependent of two owners to lose its reference to the deleted one", func() (bool, error) {
			got := getCM(t, cs0, ns, "both")
			if got.UID != both.UID || !namesOwner(got, b.UID) {
				t.Fatalf("the dependent of two owners: uid %s (was %s), owners %+v", got.UID, both.UID, got.OwnerReferences)
			}
			return !namesOwner(got, a.UID), nil
		})
		if got := getCM(t, cs0, ns, "c"); got.UID != c2.UID || got.DeletionTimestamp != nil {
			t.Errorf("the new owner of the same name was touched: %+v", got.ObjectMeta)
		}
	})

	t.Run("scopes", func(t *testing.T) {
		ns := gcNamespace(t, cs0, "gc-scopes")
		other := gcNamespace(t, cs0, "gc-scopes-other")
		// A cluster-scoped owner of namespaced dependents.
		role, err := cs0.RbacV1().ClusterRoles().Create(t.Context(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gc-owner"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		roleRef := []metav1.OwnerReference{ownedBy(role, "rbac.authorization.k8s.io/v1", "ClusterRole", false)}
		deps := []*corev1.ConfigMap{createCM(t, cs0, gcCM(ns, "of-role", roleRef)), createCM(t, cs1, gcCM(other, "of-role", roleRef))}
		// A namespaced dependent of an owner in another namespace: the reference
		// resolves to nothing (and a Warning says so), so it is collected while the
		// object it names lives.
		owner := createCM(t, cs0, gcCM(other, "owner", nil))
		elsewhere := createCM(t, cs0, gcCM(ns, "of-other-namespace", cmOwnedBy(owner, false)))
		// A cluster-scoped dependent of a namespaced owner: unresolvable too, and left
		// alone, as Kubernetes leaves it.
		cr, err := cs0.RbacV1().ClusterRoles().Create(t.Context(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gc-of-namespaced", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "00000000-0000-0000-0000-0000000000aa"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cs1.RbacV1().ClusterRoles().Delete(t.Context(), "gc-owner", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitCMsGone(t, cs0, append(deps, elsewhere)...)
		waitFor(t, "the OwnerRefInvalidNamespace event", func() (bool, error) {
			events, err := cs0.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=of-other-namespace,reason=OwnerRefInvalidNamespace"})
			if err != nil || len(events.Items) == 0 {
				return false, err
			}
			e := events.Items[0]
			want := fmt.Sprintf(`ownerRef [v1/ConfigMap, namespace: %s, name: owner, uid: %s] does not exist in namespace "%s"`, ns, owner.UID, ns)
			if e.Type != corev1.EventTypeWarning || e.Message != want || e.Source.Component != "garbage-collector-controller" || e.InvolvedObject.UID != elsewhere.UID {
				t.Errorf("event: type %s, message %q (want %q), source %+v, involved %+v", e.Type, e.Message, want, e.Source, e.InvolvedObject)
			}
			return true, nil
		})
		getCM(t, cs0, other, "owner")
		if got, err := cs0.RbacV1().ClusterRoles().Get(t.Context(), "gc-of-namespaced", metav1.GetOptions{}); err != nil || got.UID != cr.UID {
			t.Errorf("the cluster-scoped dependent of a namespaced owner: %v", err)
		}
	})

	t.Run("finalizers of a deletion under way", func(t *testing.T) {
		ns := gcNamespace(t, cs0, "gc-again")
		fg, bg, orphan := metav1.DeletePropagationForeground, metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan
		start := func(name string) (*corev1.ConfigMap, *corev1.ConfigMap) {
			owner := createCM(t, cs0, gcCM(ns, name, nil))
			dep := createCM(t, cs0, gcCM(ns, name+"-dep", cmOwnedBy(owner, true), "example.com/hold"))
			if err := cs0.CoreV1().ConfigMaps(ns).Delete(t.Context(), name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, name+"'s dependent being deleted", func() (bool, error) { return getCM(t, cs0, ns, dep.Name).DeletionTimestamp != nil, nil })
			return owner, dep
		}
		// Deleted again without options: it keeps waiting, unchanged.
		owner, dep := start("again")
		before := getCM(t, cs0, ns, "again")
		if err := cs1.CoreV1().ConfigMaps(ns).Delete(t.Context(), "again", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if after := getCM(t, cs0, ns, "again"); after.ResourceVersion != before.ResourceVersion || !slices.Equal(after.Finalizers, []string{metav1.FinalizerDeleteDependents}) {
			t.Errorf("deleted again: resourceVersion %s -> %s, finalizers %v", before.ResourceVersion, after.ResourceVersion, after.Finalizers)
		}
		// In the background: the foregroundDeletion finalizer goes, and so does the owner.
		if err := cs1.CoreV1().ConfigMaps(ns).Delete(t.Context(), "again", metav1.DeleteOptions{PropagationPolicy: &bg}); err != nil {
			t.Fatal(err)
		}
		if ok, err := cmGone(t.Context(), cs0, ns, "again", owner.UID); err != nil || !ok {
			t.Errorf("a foreground deletion switched to background left the owner: %v", err)
		}
		releaseCM(t, cs0, ns, dep.Name)
		// Orphan: the finalizers switch, the waiting dependent loses its reference.
		owner, dep = start("switch")
		if err := cs1.CoreV1().ConfigMaps(ns).Delete(t.Context(), "switch", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
			t.Fatal(err)
		}
		waitCMsGone(t, cs0, owner)
		waitFor(t, "the dependent of an owner switched to orphan to lose its reference", func() (bool, error) {
			return !namesOwner(getCM(t, cs0, ns, dep.Name), owner.UID), nil
		})
		releaseCM(t, cs0, ns, dep.Name)
		waitCMsGone(t, cs0, dep)
		// Events never wait for the collector, as in Kubernetes.
		ev, err := cs0.CoreV1().Events(ns).Create(t.Context(), &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "ev"}, InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "x"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cs0.CoreV1().Events(ns).Delete(t.Context(), ev.Name, metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs0.CoreV1().Events(ns).Get(t.Context(), ev.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("an Event deleted with Orphan: %v, want it gone", err)
		}
	})

	t.Run("chain in the foreground", func(t *testing.T) {
		ns := gcNamespace(t, cs0, "gc-chain")
		owner := createCM(t, cs0, gcCM(ns, "owner", nil))
		dep := createCM(t, cs1, gcCM(ns, "dep", cmOwnedBy(owner, true)))
		grand := createCM(t, cs0, gcCM(ns, "grand", cmOwnedBy(dep, true), "example.com/hold"))
		fg := metav1.DeletePropagationForeground
		if err := cs1.CoreV1().ConfigMaps(ns).Delete(t.Context(), "owner", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the grand-dependent being deleted", func() (bool, error) { return getCM(t, cs0, ns, "grand").DeletionTimestamp != nil, nil })
		for _, name := range []string{"owner", "dep"} {
			if got := getCM(t, cs0, ns, name); got.DeletionTimestamp == nil || !slices.Equal(got.Finalizers, []string{metav1.FinalizerDeleteDependents}) {
				t.Errorf("%s while its blocking dependent remains: deletionTimestamp %v, finalizers %v", name, got.DeletionTimestamp, got.Finalizers)
			}
		}
		releaseCM(t, cs0, ns, "grand")
		waitCMsGone(t, cs0, grand, dep, owner)
	})

	t.Run("circle", func(t *testing.T) {
		// Kubernetes' "should not be blocked by dependency circle", with ConfigMaps:
		// each owns the next, blocking; one deleted in the foreground takes them all.
		ns := gcNamespace(t, cs0, "gc-circle")
		var cms []*corev1.ConfigMap
		for i := range 3 {
			cms = append(cms, createCM(t, cs0, gcCM(ns, fmt.Sprint("cm-", i), nil)))
		}
		for i, cm := range cms {
			owner := cms[(i+2)%3]
			patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}]}}`, owner.Name, owner.UID)
			if _, err := cs1.CoreV1().ConfigMaps(ns).Patch(t.Context(), cm.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		fg := metav1.DeletePropagationForeground
		if err := cs0.CoreV1().ConfigMaps(ns).Delete(t.Context(), "cm-0", metav1.DeleteOptions{PropagationPolicy: &fg, Preconditions: metav1.NewUIDPreconditions(string(cms[0].UID))}); err != nil {
			t.Fatal(err)
		}
		waitCMsGone(t, cs0, cms...)
	})

	t.Run("metrics", func(t *testing.T) {
		// The leader's controllers report their outcomes as every controller does.
		total := map[string]float64{}
		for _, srv := range c.Servers {
			for _, m := range scrape(t, srv)["concord_controller_reconcile_total"].GetMetric() {
				l := labelsOf(m)
				total[l["controller"]+" "+l["result"]] += m.GetCounter().GetValue()
			}
		}
		for _, key := range []string{"garbage-collector-delete success", "garbage-collector-orphan success"} {
			if total[key] == 0 {
				t.Errorf("concord_controller_reconcile_total %s: none (all: %v)", key, total)
			}
		}
	})

	t.Run("custom resources", func(t *testing.T) {
		ns := gcNamespace(t, cs0, "gc-custom")
		if got := getCM(t, cs0, "default", early.Name); got.UID != early.UID || got.DeletionTimestamp != nil {
			t.Fatalf("the dependent of an unserved kind: %+v", got.ObjectMeta)
		}
		crd := gcWidgetCRD()
		if _, err := crdClient(t, c.Servers[0]).ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		gvr := gvrOf(crd, "v1")
		waitServedEverywhere(t, c, gvr, time.Now())
		waitCMsGone(t, cs0, early)
		widgets0, widgets1 := c.Servers[0].Dynamic(t).Resource(gvr).Namespace(ns), c.Servers[1].Dynamic(t).Resource(gvr).Namespace(ns)
		widget := func(name string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
			u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "gc.example.com/v1", "kind": "Widget"}}
			u.SetName(name)
			u.SetOwnerReferences(owners)
			out, err := widgets0.Create(t.Context(), u, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		widgetGone := func(w *unstructured.Unstructured) {
			t.Helper()
			waitFor(t, "widget "+w.GetName()+" collected", func() (bool, error) {
				got, err := widgets1.Get(t.Context(), w.GetName(), metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return true, nil
				}
				return err == nil && got.GetUID() != w.GetUID(), err
			})
		}
		ownerW := widget("owner")
		wRef := ownedBy(ownerW, "gc.example.com/v1", "Widget", true)
		cmDep := createCM(t, cs0, gcCM(ns, "of-widget", []metav1.OwnerReference{wRef}))
		wDep := widget("of-widget", wRef)
		cmOwner := createCM(t, cs0, gcCM(ns, "owner", nil))
		wOfCM := widget("of-configmap", cmOwnedBy(cmOwner, true)...)
		if err := widgets1.Delete(t.Context(), "owner", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitCMsGone(t, cs0, cmDep)
		widgetGone(wDep)
		fg := metav1.DeletePropagationForeground
		if err := cs1.CoreV1().ConfigMaps(ns).Delete(t.Context(), "owner", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
			t.Fatal(err)
		}
		widgetGone(wOfCM)
		waitCMsGone(t, cs0, cmOwner)

		// Orphaned custom resources keep living.
		orphanOwner := widget("orphan-owner")
		kept := widget("kept", ownedBy(orphanOwner, "gc.example.com/v1", "Widget", true))
		orphan := metav1.DeletePropagationOrphan
		if err := widgets1.Delete(t.Context(), "orphan-owner", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
			t.Fatal(err)
		}
		widgetGone(orphanOwner)
		waitFor(t, "the orphaned widget", func() (bool, error) {
			got, err := widgets0.Get(t.Context(), "kept", metav1.GetOptions{})
			if err != nil {
				return false, fmt.Errorf("orphaned widget: %w, want it kept", err)
			}
			if got.GetUID() != kept.GetUID() {
				return false, fmt.Errorf("orphaned widget replaced: uid %s, was %s", got.GetUID(), kept.GetUID())
			}
			return len(got.GetOwnerReferences()) == 0, nil
		})

		// The definition deleted: its custom resources go first, then their dependents.
		last := widget("last")
		lastDep := createCM(t, cs0, gcCM(ns, "of-last", []metav1.OwnerReference{ownedBy(last, "gc.example.com/v1", "Widget", false)}))
		if err := crdClient(t, c.Servers[1]).ApiextensionsV1().CustomResourceDefinitions().Delete(t.Context(), crd.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitCMsGone(t, cs0, lastDep)
	})
}

// gcWidgetCRD defines namespaced Widgets of gc.example.com, any content.
func gcWidgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.gc.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "gc.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
}

// releaseCM removes the finalizers of ns/name.
func releaseCM(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	if _, err := cs.CoreV1().ConfigMaps(ns).Patch(t.Context(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("releasing %s/%s: %v", ns, name, err)
	}
}

// Kubernetes' legacy default: CronJobs deleted through batch/v1beta1 (served up to
// 1.24) orphan their dependents; through batch/v1 they do not.
func TestGarbageCollectionLegacyDefault(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		o.Compatibility.BinaryVersion, o.FlowControl.Enable = "1.24", false
	}))
	cs, dyn := c.Servers[0].Clientset(t), c.Servers[0].Dynamic(t)
	for _, version := range []string{"v1beta1", "v1"} {
		cronJobs := dyn.Resource(schema.GroupVersionResource{Group: "batch", Version: version, Resource: "cronjobs"}).Namespace("default")
		cj := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "batch/" + version, "kind": "CronJob", "metadata": map[string]interface{}{"name": "cj-" + version},
			"spec": map[string]interface{}{"schedule": "@hourly", "jobTemplate": map[string]interface{}{"spec": map[string]interface{}{"template": map[string]interface{}{
				"spec": map[string]interface{}{"restartPolicy": "Never", "containers": []interface{}{map[string]interface{}{"name": "c", "image": "busybox"}}}}}}},
		}}
		cj, err := cronJobs.Create(t.Context(), cj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dep := createCM(t, cs, gcCM("default", "of-cj-"+version, []metav1.OwnerReference{ownedBy(cj, "batch/"+version, "CronJob", false)}))
		// The CronJob's and the ConfigMap's events reach the collector through two
		// watches: it orphans the dependents it has seen.
		waitCollectorSawConfigMaps(t, cs, "default")
		if err := cronJobs.Delete(t.Context(), cj.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the cronjob deleted through "+version, func() (bool, error) {
			_, err := cronJobs.Get(t.Context(), cj.GetName(), metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if version == "v1" {
			waitCMsGone(t, cs, dep)
			continue
		}
		waitOrphaned(t, cs, dep, cj.GetUID())
	}
}

// waitCollectorSawConfigMaps waits until the garbage collector has seen every
// ConfigMap of ns made so far: it makes one owned by a ConfigMap that never existed,
// which the collector deletes once its ConfigMap events reach it. (kube's integration
// tests poll the collector's graph, which runs in their process.)
func waitCollectorSawConfigMaps(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	never := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "never", UID: uuid.NewUUID()}}
	waitCMsGone(t, cs, createCM(t, cs, gcCM(ns, "probe-"+string(never.UID), cmOwnedBy(never, false))))
}

// createCMs creates n ConfigMaps prefix-0..n-1 in ns with owners, sixteen at a time,
// through the clients in turn.
func createCMs(t *testing.T, clients []kubernetes.Interface, ns, prefix string, n int, owners []metav1.OwnerReference) {
	t.Helper()
	var g errgroup.Group
	g.SetLimit(16)
	for i := range n {
		cs := clients[i%len(clients)]
		g.Go(func() error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), gcCM(ns, fmt.Sprint(prefix, i), owners), metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("creating %d configmaps %s*: %v", n, prefix, err)
	}
}

// storedCMs counts the ConfigMaps of ns whose name starts with prefix as etcd holds
// them: one count-only read, however many there are. It is what the collection tests
// poll while they wait (every 50 ms), so that the waiting does not load the servers
// under test with a list of thousands of ConfigMaps at that rate. What the API answers
// is checked once the collection is done.
func storedCMs(ctx context.Context, c *harness.Cluster, ns, prefix string) (int, error) {
	resp, err := c.EtcdClient.Get(ctx, "/registry/core/configmaps/"+ns+"/"+prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return int(resp.Count), nil
}

// listedCMs counts the ConfigMaps of ns whose name starts with prefix as the API
// lists them.
func listedCMs(ctx context.Context, cs kubernetes.Interface, ns, prefix string) (int, error) {
	n := 0
	opts := metav1.ListOptions{Limit: 1000}
	for {
		list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
		if err != nil {
			return 0, err
		}
		for _, cm := range list.Items {
			if strings.HasPrefix(cm.Name, prefix) {
				n++
			}
		}
		if list.Continue == "" {
			return n, nil
		}
		opts.Continue = list.Continue
	}
}

// Thousands of dependents of one owner, collected completely: in the background, and
// in the foreground, where the owner stays until the last of them is gone.
func TestGarbageCollectionAtScale(t *testing.T) {
	t.Parallel()
	const n = 2000
	c := harness.Start(t, 2)
	clients := []kubernetes.Interface{c.Servers[0].Clientset(t), c.Servers[1].Clientset(t)}
	cs := clients[0]
	ns := gcNamespace(t, cs, "gc-scale")
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground} {
		name := strings.ToLower(string(policy))
		owner := createCM(t, cs, gcCM(ns, name, nil))
		start := time.Now()
		createCMs(t, clients, ns, name+"-", n, cmOwnedBy(owner, true))
		created := time.Since(start)
		start = time.Now()
		if err := clients[1].CoreV1().ConfigMaps(ns).Delete(t.Context(), name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
			t.Fatal(err)
		}
		// The collection may be slow on a loaded machine; it fails when it stops.
		waitUnstalled(t, string(policy)+" collection", func() (bool, string, error) {
			// The owner first: once it is gone, dependents counted after may not remain.
			ownerGone, err := cmGone(t.Context(), cs, ns, name, owner.UID)
			if err != nil {
				return false, "", err
			}
			left, err := storedCMs(t.Context(), c, ns, name+"-")
			if err != nil {
				return false, "", err
			}
			if left > 0 && ownerGone && policy == metav1.DeletePropagationForeground {
				return false, "", fmt.Errorf("the owner deleted in the foreground went while %d dependents remained", left)
			}
			return left == 0 && ownerGone, fmt.Sprintf("%d dependents left, owner gone %v", left, ownerGone), nil
		})
		t.Logf("%s: %d dependents created in %v, collected in %v", policy, n, created, time.Since(start))
		waitFor(t, "the API to list none of the "+name+" dependents", func() (bool, error) {
			left, err := listedCMs(t.Context(), cs, ns, name+"-")
			return left == 0, err
		})
	}
}

// The server leading the garbage collector is killed (SIGKILL) mid-collection: the
// next leader continues from what it reads. Of a population of owners, some deleted
// in the background and with Orphan, others alive, nothing is left behind and nothing
// that should live is deleted, checked through the API and in etcd.
func TestGarbageCollectorLeaderKilled(t *testing.T) {
	t.Parallel()
	// The identity lease, the servers' default: the collector's election is timed from
	// it (identity.ElectionTimings: a lease of 15s renewed within 10s, as
	// kube-controller-manager's). A shorter election changes hands on a loaded machine
	// whenever a renewal through the server is slow, and every new term lists every
	// resource again: under a load average of 40, a 3s election lost its lease after
	// 30s of collecting and took 44s to collect again.
	const lease = identity.DefaultLeaseDuration
	electionLease, _, retry := identity.ElectionTimings(lease)
	c := harness.Start(t, 0, svLeases(lease, time.Second))
	h := startHelper(t, c, svHelperOptions{LeaseDuration: lease, LeaseRenew: time.Second})
	// The election's Lease, as etcd holds it: the helper, serving alone, leads.
	leader := func() (string, error) {
		resp, err := c.EtcdClient.Get(t.Context(), "/registry/coordination.k8s.io/leases/kube-system/"+feature.ElectionLease)
		if err != nil || len(resp.Kvs) == 0 {
			return "", err
		}
		var l coordinationv1.Lease
		if err := json.Unmarshal(resp.Kvs[0].Value, &l); err != nil || l.Spec.HolderIdentity == nil {
			return "", err
		}
		return *l.Spec.HolderIdentity, nil
	}
	leads := func(id string) func() (bool, error) {
		return func() (bool, error) {
			holder, err := leader()
			return strings.HasPrefix(holder, id+"_"), err
		}
	}
	waitFor(t, "the helper server leading the garbage collector", leads(h.ID))
	s := c.AddServer(t)
	cs := s.Clientset(t)
	ns := gcNamespace(t, cs, "gc-kill")
	doomed := createCM(t, cs, gcCM(ns, "doomed", nil))
	alive := createCM(t, cs, gcCM(ns, "alive", nil))
	orphaner := createCM(t, cs, gcCM(ns, "orphaner", nil))
	clients := []kubernetes.Interface{cs}
	const nDoomed, nAlive, nShared, nOrphaned = 2000, 200, 100, 300
	createCMs(t, clients, ns, "doomed-", nDoomed, cmOwnedBy(doomed, false))
	createCMs(t, clients, ns, "alive-", nAlive, cmOwnedBy(alive, false))
	createCMs(t, clients, ns, "shared-", nShared, append(cmOwnedBy(doomed, true), cmOwnedBy(alive, true)...))
	createCMs(t, clients, ns, "orphaned-", nOrphaned, cmOwnedBy(orphaner, true))
	if err := cs.CoreV1().ConfigMaps(ns).Delete(t.Context(), "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	orphan := metav1.DeletePropagationOrphan
	if err := cs.CoreV1().ConfigMaps(ns).Delete(t.Context(), "orphaner", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	var left int
	waitFor(t, "the collection to be under way", func() (bool, error) {
		var err error
		left, err = storedCMs(t.Context(), c, ns, "doomed-")
		return left < nDoomed*9/10, err
	})
	h.kill()
	killed := time.Now()
	t.Logf("leader killed with %d of %d dependents left to collect", left, nDoomed)
	// A killed leader does not give its lease up: the next one acquires it once it has
	// expired, at its next try.
	progress.Wait(t, "the next leader", progress.Limits{Stall: electionLease + retry + 20*time.Second}, func() (bool, string, error) {
		ok, err := leads(s.ServerID)()
		return ok, "", err
	})
	waitUnstalled(t, "the collection after the kill", func() (bool, string, error) {
		left, err := storedCMs(t.Context(), c, ns, "doomed-")
		if err != nil {
			return false, "", err
		}
		gone, err := cmGone(t.Context(), cs, ns, "orphaner", orphaner.UID)
		if err != nil {
			return false, "", err
		}
		return left == 0 && gone, fmt.Sprintf("%d dependents left, orphaning owner gone %v", left, gone), nil
	})
	t.Logf("collection completed %v after the kill", time.Since(killed))
	// Nothing refers to a deleted owner (references the collector learned of late go
	// once their owner has), and nothing that should live was deleted.
	var list *corev1.ConfigMapList
	waitFor(t, "no reference to a deleted owner", func() (bool, error) {
		var err error
		if list, err = cs.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{}); err != nil {
			return false, err
		}
		return !slices.ContainsFunc(list.Items, func(cm corev1.ConfigMap) bool {
			return namesOwner(&cm, doomed.UID) || namesOwner(&cm, orphaner.UID)
		}), nil
	})
	count := map[string]int{}
	for _, cm := range list.Items {
		kind, _, _ := strings.Cut(cm.Name, "-")
		count[kind]++
		if cm.DeletionTimestamp != nil || namesOwner(&cm, doomed.UID) || namesOwner(&cm, orphaner.UID) {
			t.Errorf("%s: deletionTimestamp %v, owners %+v", cm.Name, cm.DeletionTimestamp, cm.OwnerReferences)
		}
		if kind != "orphaned" && cm.Name != "alive" && !namesOwner(&cm, alive.UID) {
			t.Errorf("%s lost its live owner: %+v", cm.Name, cm.OwnerReferences)
		}
	}
	want := map[string]int{"alive": nAlive + 1, "shared": nShared, "orphaned": nOrphaned}
	if !reflect.DeepEqual(count, want) {
		t.Errorf("configmaps by name after the collection: %v, want %v", count, want)
	}
	stored, err := storedCMs(t.Context(), c, ns, "")
	if err != nil {
		t.Fatal(err)
	}
	if stored != len(list.Items) {
		t.Errorf("etcd holds %d configmaps of %s, the API lists %d", stored, ns, len(list.Items))
	}
}
