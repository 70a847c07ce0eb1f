package apiextensions

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/storage"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// server is what a Concord server contributes to the controller: a registry of its
// own and a store, over storage shared with the other servers.
type apiServer struct {
	reg   *registry.Registry
	store *store.Store
	ctrl  *Controller
}

func startServer(t *testing.T, raw *storage.Store) *apiServer {
	t.Helper()
	reg, st := newRegistry(t, raw)
	ctrl, err := NewController(reg, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &apiServer{reg: reg, store: st, ctrl: ctrl}
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.ctrl.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	if !cache.WaitForCacheSync(ctx.Done(), s.ctrl.HasSynced) {
		t.Fatal("controller did not sync")
	}
	return s
}

func eventually(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *apiServer) crd(t *testing.T, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	t.Helper()
	u, err := s.store.Get(t.Context(), store.Ref{Resource: s.reg.Get(GroupResource), Version: "v1", Name: name}, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return fromStore(t, u), nil
}

func (s *apiServer) updateCRD(t *testing.T, name string, mutate func(*apiextensionsv1.CustomResourceDefinition)) {
	t.Helper()
	_, _, err := s.store.Update(t.Context(), store.Ref{Resource: s.reg.Get(GroupResource), Version: "v1", Name: name}, func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		crd := fromStore(t, cur)
		mutate(crd)
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		return &unstructured.Unstructured{Object: m}, err
	}, store.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

var widgetsGR = schema.GroupResource{Group: "example.com", Resource: "widgets"}

// Two servers' controllers over one storage: both serve a new definition, agree on
// its status without fighting over it, follow a storage version flip, and clean up a
// deleted definition.
func TestControllersShareStorage(t *testing.T) {
	ctx := t.Context()
	st := newStorage(t)
	servers := []*apiServer{startServer(t, st), startServer(t, st)}
	a := servers[0]

	start := time.Now()
	if _, err := a.store.Create(ctx, store.Ref{Resource: a.reg.Get(GroupResource), Version: "v1"}, toUnstructured(t, widgetsCRD()), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, s := range servers {
		eventually(t, fmt.Sprintf("server %d serves widgets", i), time.Second, func() bool { return s.reg.Get(widgetsGR) != nil })
	}
	t.Logf("served by both servers after %v", time.Since(start))
	res := servers[1].reg.Get(widgetsGR)
	if res.Names.Kind != "Widget" || res.Names.ListKind != "WidgetList" || !slices.Equal(res.Names.ShortNames, []string{"wd"}) ||
		res.Namespaced || res.StorageVersion != "v1" || !slices.Equal(res.ServedVersions(), []string{"v2", "v1"}) ||
		res.Owner == nil || res.Owner.Name != "widgets.example.com" || res.Owner.UID == "" || res.Schema("v2") == nil {
		t.Fatalf("served definition = %+v", res)
	}
	crd, err := a.crd(t, "widgets.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) || crd.Status.AcceptedNames.Kind != "Widget" {
		t.Fatalf("status = %+v", crd.Status)
	}
	// No ping-pong: once decided, the status is not written again.
	rv := crd.ResourceVersion
	time.Sleep(300 * time.Millisecond)
	if crd, _ = a.crd(t, "widgets.example.com"); crd.ResourceVersion != rv {
		t.Fatalf("the status keeps changing: resourceVersion %s -> %s (%+v)", rv, crd.ResourceVersion, crd.Status)
	}

	// A server started now serves the definition as soon as it has synced.
	if late := startServer(t, st); late.reg.Get(widgetsGR) == nil {
		t.Fatal("a synced controller does not serve the existing definition")
	}

	// Objects are written through the served definition; the storage version flips.
	for i, s := range servers {
		obj := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]interface{}{"name": fmt.Sprintf("w%d", i)},
		}}
		if _, err := s.store.Create(ctx, store.Ref{Resource: s.reg.Get(widgetsGR), Version: "v1"}, obj, store.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	servers[1].updateCRD(t, "widgets.example.com", func(c *apiextensionsv1.CustomResourceDefinition) {
		c.Spec.Versions[0].Storage, c.Spec.Versions[1].Storage = false, true
	})
	for i, s := range servers {
		eventually(t, fmt.Sprintf("server %d encodes in v2", i), time.Second, func() bool {
			r := s.reg.Get(widgetsGR)
			return r != nil && r.StorageVersion == "v2"
		})
	}
	if crd, _ = a.crd(t, "widgets.example.com"); !slices.Equal(crd.Status.StoredVersions, []string{"v1", "v2"}) {
		t.Fatalf("storedVersions = %v", crd.Status.StoredVersions)
	}

	// Deletion: one object is held by a finalizer of its own.
	held := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v2", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "held", "finalizers": []interface{}{"example.com/hold"}},
	}}
	if _, err := a.store.Create(ctx, store.Ref{Resource: a.reg.Get(widgetsGR), Version: "v2"}, held, store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, deleted, err := a.store.Delete(ctx, store.Ref{Resource: a.reg.Get(GroupResource), Version: "v1", Name: "widgets.example.com"}, store.DeleteOptions{}); err != nil || deleted {
		t.Fatalf("delete: deleted=%v err=%v, want it held by the cleanup finalizer", deleted, err)
	}
	eventually(t, "the cleanup to wait for the held object", 5*time.Second, func() bool {
		crd, err := a.crd(t, "widgets.example.com")
		return err == nil && isTerminating(crd, reasonDeletionCheck)
	})
	// The condition may have been written by the other server's controller: this one
	// serves the guarded definition once it has seen the deletion too.
	eventually(t, "the create guard on a terminating definition", 5*time.Second, func() bool {
		r := a.reg.Get(widgetsGR)
		return r != nil && r.Hooks != nil && r.Hooks.AdmitCreate != nil
	})
	r := a.reg.Get(widgetsGR)
	list, err := a.store.List(ctx, store.Ref{Resource: r, Version: "v1"}, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].GetName() != "held" {
		t.Fatalf("remaining objects: %v %v", err, list)
	}
	_, _, err = a.store.Update(ctx, store.Ref{Resource: r, Version: "v1", Name: "held"}, func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		cur.SetFinalizers(nil)
		return cur, nil
	}, store.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the definition to be deleted", 5*time.Second, func() bool {
		_, err := a.crd(t, "widgets.example.com")
		return apierrors.IsNotFound(err)
	})
	for i, s := range servers {
		eventually(t, fmt.Sprintf("server %d to stop serving widgets", i), time.Second, func() bool { return s.reg.Get(widgetsGR) == nil })
	}
}

// Definitions whose names conflict are decided alike by every server, even when
// created at the same time through different servers.
func TestConcurrentConflictingDefinitions(t *testing.T) {
	ctx := t.Context()
	st := newStorage(t)
	servers := []*apiServer{startServer(t, st), startServer(t, st)}
	names := []string{"widgets", "gadgets", "gizmos", "doohickeys"}
	errs := make(chan error, len(names))
	for i, plural := range names {
		go func() {
			crd := widgetsCRD()
			crd.Name = plural + ".example.com"
			crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: "Widget"} // all want Widget
			s := servers[i%2]
			_, err := s.store.Create(ctx, store.Ref{Resource: s.reg.Get(GroupResource), Version: "v1"}, toUnstructured(t, crd), store.WriteOptions{})
			errs <- err
		}()
	}
	for range names {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Servers deciding from views that lag each other may accept the kind twice for
	// a moment; the older definition keeps it.
	var winners []string
	eventually(t, "exactly one definition of kind Widget established", 5*time.Second, func() bool {
		winners = nil
		for _, plural := range names {
			crd, err := servers[0].crd(t, plural+".example.com")
			if err != nil || apihelpers.FindCRDCondition(crd, apiextensionsv1.NamesAccepted) == nil {
				return false
			}
			if apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
				winners = append(winners, plural)
			}
		}
		return len(winners) == 1
	})
	gr := schema.GroupResource{Group: "example.com", Resource: winners[0]}
	for i, s := range servers {
		eventually(t, fmt.Sprintf("server %d serves only %s", i, winners[0]), time.Second, func() bool {
			n := 0
			for _, r := range s.reg.Resources() {
				if r.Group == "example.com" {
					n++
				}
			}
			return n == 1 && s.reg.Get(gr) != nil
		})
	}
}
