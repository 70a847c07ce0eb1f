package apiextensions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// groupIndex indexes definitions by spec.group, the scope of name conflicts.
const groupIndex = "group"

// Controller serves the custom resources of CustomResourceDefinitions. Every server
// runs one: each keeps its own registry in step with the definitions in storage, and
// all of them maintain the definitions' status, which they compute alike from the same
// objects, so that running several at once converges (status writes are preconditioned
// on the resourceVersion they were computed from, and written only when they change
// something). For each definition it
//
//   - decides the accepted names (conflicts with built-in resources and other
//     definitions of the group give NamesAccepted=False, never an error), and sets
//     Established once all names were accepted;
//   - puts the Definition of an established definition into the registry (and takes it
//     out when the definition goes), so that it is served, discovered and documented;
//   - when the definition is deleted: stops creates, deletes every custom resource,
//     then removes the customresourcecleanup finalizer so that the deletion completes.
type Controller struct {
	reg      *registry.Registry
	store    *store.Store
	informer cache.SharedIndexInformer
	ctrl     *reconcile.Controller[string]
	synced   atomic.Bool
	// syncedCh is closed when synced turns true.
	syncedCh chan struct{}

	// deferred are the deleted definitions whose cleanup the start-up pass left for
	// later, so that serving the others is not delayed. Only the start-up pass uses it.
	deferred []string

	mu sync.Mutex
	// published holds, per definition name, the fingerprint of what was put into the
	// registry for it, so that status-only changes do not replace the Resource.
	published map[string]string

	// Publish, if set before Run, puts definitions into service instead of
	// Registry.Put: the storage version manager's (storageversion.Manager.Publish),
	// which reports a new storage version before put runs. An error wrapping
	// ErrPublishAgain says to publish again shortly.
	Publish func(ctx context.Context, res *registry.Resource, put func(context.Context, *registry.Resource) error) error

	// NoRatcheting, if set before Run, serves custom resources without validation
	// ratcheting (registry.Resource.NoRatcheting): the CRDValidationRatcheting feature
	// gate is off.
	NoRatcheting bool
}

// NewController returns a controller serving the definitions stored through st
// (apiextensions.k8s.io customresourcedefinitions, which must be in reg) into reg.
func NewController(reg *registry.Registry, st *store.Store, metrics *reconcile.Metrics) (*Controller, error) {
	c := &Controller{
		syncedCh:  make(chan struct{}),
		reg:       reg,
		store:     st,
		published: map[string]string{},
	}
	c.informer = st.NewInformer(store.Source{Registry: reg, Resource: GroupResource, Version: "v1"}, cache.Indexers{
		groupIndex: func(obj interface{}) ([]string, error) {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return nil, nil
			}
			g, _, _ := unstructured.NestedString(u.Object, "spec", "group")
			return []string{g}, nil
		},
	})
	c.ctrl = reconcile.New("customresourcedefinitions", reconcile.Func[string](c.reconcile), reconcile.Options[string]{Workers: 2, Metrics: metrics})
	return c, c.ctrl.Watch(c.informer, c.groupOf)
}

// HasSynced reports whether every definition that existed when the controller started
// has been reconciled once: from then on, the registry serves them.
func (c *Controller) HasSynced() bool { return c.synced.Load() }

// Synced is closed once HasSynced is true.
func (c *Controller) Synced() <-chan struct{} { return c.syncedCh }

// Run reconciles definitions until ctx is done. It first reconciles every existing
// definition (HasSynced turns true), then follows changes with two workers; it
// returns once they and the informer have stopped.
func (c *Controller) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("crd-controller"))
	defer reconcile.StartInformers(ctx, c.informer)()
	if !c.ctrl.WaitForSync(ctx) {
		return nil
	}
	// Reconcile what exists before serving: the queue holds every definition now.
	c.ctrl.Drain(ctx)
	c.synced.Store(true)
	close(c.syncedCh)
	for _, name := range c.deferred {
		c.ctrl.Add(name)
	}
	c.deferred = nil
	klog.FromContext(ctx).V(2).Info("CustomResourceDefinitions served", "count", len(c.informer.GetStore().ListKeys()))
	return c.ctrl.Run(ctx)
}

// groupOf names a definition and the other definitions of its group, whose names may
// be freed or taken by its change.
func (c *Controller) groupOf(u *unstructured.Unstructured) []string {
	keys := []string{u.GetName()}
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	siblings, _ := c.informer.GetIndexer().ByIndex(groupIndex, group)
	for _, s := range siblings {
		if su, ok := s.(*unstructured.Unstructured); ok && su.GetName() != u.GetName() {
			keys = append(keys, su.GetName())
		}
	}
	return keys
}

// ErrPublishAgain means, wrapped in Publish's error, that the definition is in service
// as far as it could be put and must be published again shortly: the storage version
// manager keeps the previous storage version until the other servers decode the new
// one. The controller looks again after publishAgainAfter; it is a wait, not a failure
// whose retries back off (exponentially, past any wait a change should take).
var ErrPublishAgain = errors.New("the definition must be published again shortly")

// publishAgainAfter is how soon a definition is published again after ErrPublishAgain.
const publishAgainAfter = 250 * time.Millisecond

// reconcile brings the status of the named definition and its registry entry up to
// date with the definition as stored.
func (c *Controller) reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	obj, exists, err := c.informer.GetIndexer().GetByKey(name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !exists {
		c.unpublish(ctx, name)
		return reconcile.Result{}, nil
	}
	crd, err := FromUnstructured(obj.(*unstructured.Unstructured))
	if err != nil {
		// Not retried: only a new version of the object can fix it.
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("cannot serve CustomResourceDefinition %s: %w", name, err))
	}
	if err := c.serve(ctx, crd); errors.Is(err, ErrPublishAgain) {
		klog.FromContext(ctx).V(2).Info("Publishing the definition again shortly", "crd", name, "reason", err.Error())
		return reconcile.Result{RequeueAfter: publishAgainAfter}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	if crd.DeletionTimestamp == nil {
		return reconcile.Result{}, nil
	}
	if !c.synced.Load() {
		c.deferred = append(c.deferred, name)
		return reconcile.Result{}, nil
	}
	return c.cleanup(ctx, crd)
}

// serve writes the status crd should have, if it differs, and puts what is stored into
// the registry.
func (c *Controller) serve(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	var statusErr error
	want := desiredStatus(crd, claims(crd, c.group(crd.Spec.Group), c.reg.Resources()))
	if statusChanged(crd, want) {
		if written, err := c.writeStatus(ctx, crd, want); err != nil {
			statusErr = err // serve what is stored meanwhile
		} else {
			crd = written
		}
	}
	if err := c.publish(ctx, crd); err != nil {
		return err
	}
	return statusErr
}

// group returns the stored definitions of an API group.
func (c *Controller) group(group string) []*apiextensionsv1.CustomResourceDefinition {
	objs, _ := c.informer.GetIndexer().ByIndex(groupIndex, group)
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(objs))
	for _, o := range objs {
		if crd, err := FromUnstructured(o.(*unstructured.Unstructured)); err == nil {
			out = append(out, crd)
		}
	}
	return out
}

// writeStatus writes the status of want if crd is still the stored definition, and
// returns the stored result.
func (c *Controller) writeStatus(ctx context.Context, crd, want *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, error) {
	res := c.reg.Get(GroupResource)
	if res == nil {
		return nil, fmt.Errorf("%w: %s", store.ErrNotServed, GroupResource)
	}
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&want.Status)
	if err != nil {
		return nil, err
	}
	rv := crd.ResourceVersion
	out, _, err := c.store.Update(ctx, store.Ref{Resource: res, Version: "v1", Name: crd.Name}, func(_ context.Context, cur *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		cur.Object["status"] = status
		return cur, nil
	}, store.UpdateOptions{
		WriteOptions:  store.WriteOptions{Subresource: "status"},
		Preconditions: &metav1.Preconditions{ResourceVersion: &rv},
	})
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).V(2).Info("CustomResourceDefinition status updated", "crd", crd.Name,
		"established", apihelpers.IsCRDConditionTrue(want, apiextensionsv1.Established),
		"namesAccepted", apihelpers.IsCRDConditionTrue(want, apiextensionsv1.NamesAccepted))
	return FromUnstructured(out)
}

// publish makes the registry serve crd as it is: its Definition if it is established,
// nothing otherwise.
func (c *Controller) publish(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		c.unpublish(ctx, crd.Name)
		return nil
	}
	terminating := crd.DeletionTimestamp != nil
	fingerprint, err := json.Marshal(struct {
		UID         string
		Spec        *apiextensionsv1.CustomResourceDefinitionSpec
		Names       *apiextensionsv1.CustomResourceDefinitionNames
		Terminating bool
	}{string(crd.UID), &crd.Spec, &crd.Status.AcceptedNames, terminating})
	if err != nil {
		return err
	}
	c.mu.Lock()
	same := c.published[crd.Name] == string(fingerprint)
	c.mu.Unlock()
	if same {
		return nil
	}
	res, err := Definition(crd)
	if err != nil {
		return err
	}
	res.NoRatcheting = c.NoRatcheting
	if terminating {
		res.Hooks = terminatingHooks(res.GroupResource())
	}
	if cur := c.reg.Get(res.GroupResource()); cur != nil && cur.Owner == nil {
		// Never replace a built-in resource (names acceptance keeps such a definition
		// from being established; this guards definitions stored by something else).
		return fmt.Errorf("%s: %s is a built-in resource", crd.Name, res.GroupResource())
	}
	if err := c.put(ctx, res); err != nil {
		return err
	}
	c.mu.Lock()
	c.published[crd.Name] = string(fingerprint)
	c.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Serving custom resource", "crd", crd.Name, "storageVersion", res.StorageVersion,
		"versions", res.ServedVersions(), "terminating", terminating)
	return nil
}

// put is the one place a custom resource definition reaches the registry: from here
// on this server serves it, and writes objects in its storage version.
//
// With Publish set (StorageVersionAPI), the server's StorageVersion entry for the
// resource is updated first (encoding = res.StorageVersion, decodable = every version,
// served = the served ones, owner reference = res.Owner), custom resource writes held
// meanwhile.
func (c *Controller) put(ctx context.Context, res *registry.Resource) error {
	if c.Publish != nil {
		return c.Publish(ctx, res, c.reg.Put)
	}
	return c.reg.Put(ctx, res)
}

// unpublish removes the resource of the named definition from the registry, if this
// controller put it there.
func (c *Controller) unpublish(ctx context.Context, name string) {
	c.mu.Lock()
	_, had := c.published[name]
	delete(c.published, name)
	c.mu.Unlock()
	if !had {
		return
	}
	for _, res := range c.reg.Resources() {
		if res.Owner != nil && res.Owner.Name == name {
			c.reg.Delete(res.GroupResource())
			klog.FromContext(ctx).V(2).Info("Stopped serving custom resource", "crd", name, "resource", res.GroupResource())
		}
	}
}
