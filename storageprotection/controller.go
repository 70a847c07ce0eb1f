package storageprotection

import (
	"context"
	"slices"
	"time"

	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// The resources and their finalizers (kube's StorageObjectInUseProtection's).
var (
	Claims  = schema.GroupResource{Resource: "persistentvolumeclaims"}
	Volumes = schema.GroupResource{Resource: "persistentvolumes"}
	Classes = schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattributesclasses"}
	pods    = schema.GroupResource{Resource: "pods"}

	finalizers = map[schema.GroupResource]string{
		Claims:  "kubernetes.io/pvc-protection",
		Volumes: "kubernetes.io/pv-protection",
		Classes: "kubernetes.io/vac-protection",
	}
)

// RecheckAfter is how soon an object still in use is looked at again.
const RecheckAfter = 10 * time.Second

// key names one protected object.
type key struct {
	resource        schema.GroupResource
	namespace, name string
}

// Controller removes the protection finalizers of deleted objects nothing uses.
type Controller struct {
	reg       *registry.Registry
	store     *store.Store
	informers []cache.SharedIndexInformer
	ctrl      *reconcile.Controller[key]
}

// NewController returns the controller of the protected resources reg serves in v1,
// stored in st.
func NewController(reg *registry.Registry, st *store.Store, metrics *reconcile.Metrics) (*Controller, error) {
	c := &Controller{reg: reg, store: st}
	c.ctrl = reconcile.New("storage-protection", reconcile.Func[key](c.reconcile), reconcile.Options[key]{Metrics: metrics})
	for _, gr := range []schema.GroupResource{Claims, Volumes, Classes} {
		if c.resource(gr) == nil {
			continue
		}
		inf := st.NewInformer(store.Source{Registry: reg, Resource: gr, Version: "v1"}, nil)
		c.informers = append(c.informers, inf)
		if err := c.ctrl.Watch(inf, func(obj *unstructured.Unstructured) []key {
			if !deleting(gr, obj) {
				return nil
			}
			return []key{{gr, obj.GetNamespace(), obj.GetName()}}
		}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// NewFeature returns the controller of the protected resources the server serves in
// v1 as the server runs it: built over its registry and object store when the server
// starts it (NewController), and started as the component
// storage-protection-controller. Every server runs one.
func NewFeature(srv feature.Server) feature.Feature {
	return feature.Func(func(ctx context.Context, g *lifecycle.Group) error {
		c, err := NewController(srv.Registry, srv.Store, srv.ReconcileMetrics)
		if err != nil {
			return err
		}
		return g.Start(ctx, lifecycle.Component{Name: "storage-protection-controller", Run: c.Run})
	})
}

// Run follows the protected resources until ctx is done, and returns once its
// workers and informers have stopped.
func (c *Controller) Run(ctx context.Context) error {
	defer reconcile.StartInformers(ctx, c.informers...)()
	return c.ctrl.Run(ctx)
}

// deleting reports whether obj, of gr, is being deleted and holds gr's finalizer.
func deleting(gr schema.GroupResource, obj *unstructured.Unstructured) bool {
	return obj.GetDeletionTimestamp() != nil && slices.Contains(obj.GetFinalizers(), finalizers[gr])
}

// resource returns gr if reg serves it in v1, else nil.
func (c *Controller) resource(gr schema.GroupResource) *registry.Resource {
	return c.reg.Served(gr, "v1")
}

// reconcile removes k's finalizer if k is being deleted and unused; if it is used,
// it looks again after RecheckAfter.
func (c *Controller) reconcile(ctx context.Context, k key) (reconcile.Result, error) {
	res := c.resource(k.resource)
	if res == nil {
		return reconcile.Result{}, nil
	}
	ref := store.Ref{Resource: res, Version: "v1", Namespace: k.namespace, Name: k.name}
	obj, err := c.store.Get(ctx, ref, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil || !deleting(k.resource, obj) {
		return reconcile.Result{}, err
	}
	used, err := c.inUse(ctx, k.resource, obj)
	if err != nil || used {
		return reconcile.Result{RequeueAfter: RecheckAfter}, err
	}
	fin := finalizers[k.resource]
	_, _, err = c.store.Update(ctx, ref, func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		cur.SetFinalizers(slices.DeleteFunc(cur.GetFinalizers(), func(f string) bool { return f == fin }))
		return cur, nil
	}, store.UpdateOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(obj.GetUID())}})
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}

// inUse reports whether obj, of gr, is in use.
func (c *Controller) inUse(ctx context.Context, gr schema.GroupResource, obj *unstructured.Unstructured) (bool, error) {
	switch gr {
	case Claims:
		return c.claimUsed(ctx, obj)
	case Volumes:
		phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
		return phase == "Bound", nil
	default:
		return c.classUsed(ctx, obj.GetName())
	}
}

// claimUsed reports whether a scheduled Pod of claim's namespace names it, as kube's
// pvc-protection controller decides (the kubelet starts no Pod whose claim is being
// deleted, so only those scheduled count; a finished Pod still holds its claim): a
// persistentVolumeClaim volume of the claim's name, or an ephemeral volume whose
// claim (<pod>-<volume>) the Pod owns, unless the Pod is shut down (deleted with no
// grace period left).
func (c *Controller) claimUsed(ctx context.Context, claim *unstructured.Unstructured) (bool, error) {
	items, err := c.list(ctx, pods, claim.GetNamespace())
	if err != nil {
		return false, err
	}
	for _, pod := range items {
		if node, _, _ := unstructured.NestedString(pod.Object, "spec", "nodeName"); node != "" && usesClaim(&pod, claim) {
			return true, nil
		}
	}
	return false, nil
}

// usesClaim reports whether pod's volumes name claim.
func usesClaim(pod, claim *unstructured.Unstructured) bool {
	volumes, _, _ := unstructured.NestedSlice(pod.Object, "spec", "volumes")
	for _, v := range volumes {
		vol, _ := v.(map[string]any)
		if name, _, _ := unstructured.NestedString(vol, "persistentVolumeClaim", "claimName"); name == claim.GetName() {
			return true
		}
		name, _ := vol["name"].(string)
		if _, ok := vol["ephemeral"]; ok && pod.GetName()+"-"+name == claim.GetName() && ownedBy(claim, pod) && !shutDown(pod) {
			return true
		}
	}
	return false
}

// ownedBy reports whether pod is obj's controller.
func ownedBy(obj, pod *unstructured.Unstructured) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == pod.GetUID()
}

// shutDown reports whether pod is deleted with no grace period left.
func shutDown(pod *unstructured.Unstructured) bool {
	g := pod.GetDeletionGracePeriodSeconds()
	return pod.GetDeletionTimestamp() != nil && g != nil && *g == 0
}

// classUsed reports whether a claim or a volume names the VolumeAttributesClass
// class.
func (c *Controller) classUsed(ctx context.Context, class string) (bool, error) {
	paths := map[schema.GroupResource][][]string{
		Claims: {{"spec", "volumeAttributesClassName"}, {"status", "currentVolumeAttributesClassName"},
			{"status", "modifyVolumeStatus", "targetVolumeAttributesClassName"}},
		Volumes: {{"spec", "volumeAttributesClassName"}},
	}
	for _, gr := range []schema.GroupResource{Claims, Volumes} {
		items, err := c.list(ctx, gr, "")
		if err != nil {
			return false, err
		}
		for _, item := range items {
			for _, p := range paths[gr] {
				if name, _, _ := unstructured.NestedString(item.Object, p...); name == class {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

// list returns the objects of gr in namespace ("": all), none if it is not served.
func (c *Controller) list(ctx context.Context, gr schema.GroupResource, namespace string) ([]unstructured.Unstructured, error) {
	res := c.resource(gr)
	if res == nil {
		return nil, nil
	}
	l, err := c.store.List(ctx, store.Ref{Resource: res, Version: "v1", Namespace: namespace}, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}
