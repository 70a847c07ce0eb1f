package reconcile

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// Watch makes c follow inf: every object inf sees added, updated or deleted queues
// the keys keys names for it, and Run waits until inf has delivered its initial list
// before any key is reconciled. Call it before Run; inf is started by its owner
// (StartInformers).
func (c *Controller[K]) Watch(inf cache.SharedIndexInformer, keys func(obj *unstructured.Unstructured) []K) error {
	return WatchOf(c, inf, keys)
}

// WatchOf is Watch for an informer of objects of type T, such as client-go's typed
// informers (*flowcontrolv1.FlowSchema): objects of another type are ignored.
func WatchOf[K comparable, T any](c *Controller[K], inf cache.SharedIndexInformer, keys func(obj T) []K) error {
	reg, err := inf.AddEventHandler(HandlerOf(c, keys))
	if err != nil {
		return err
	}
	c.synced = append(c.synced, reg.HasSynced)
	return nil
}

// WaitFor makes Run wait for synced as well, such as the HasSynced of an event handler
// registered on an informer without Watch, whose cache the reconciler reads.
func (c *Controller[K]) WaitFor(synced ...cache.InformerSynced) {
	c.synced = append(c.synced, synced...)
}

// StartInformers runs informers until ctx is done, and returns a function that waits
// for them to stop: defer StartInformers(ctx, inf)() in a Run joins them.
func StartInformers(ctx context.Context, informers ...cache.SharedIndexInformer) (wait func()) {
	var wg sync.WaitGroup
	for _, inf := range informers {
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
	return wg.Wait
}

// Handler returns an informer event handler that queues into c, for every object
// added, updated or deleted (a deletion whose final state is unknown included), the
// keys keys names for it.
func Handler[K comparable](c *Controller[K], keys func(obj *unstructured.Unstructured) []K) cache.ResourceEventHandler {
	return HandlerOf(c, keys)
}

// HandlerOf is Handler for objects of type T; objects of another type are ignored.
func HandlerOf[K comparable, T any](c *Controller[K], keys func(obj T) []K) cache.ResourceEventHandler {
	add := func(obj interface{}) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if o, ok := obj.(T); ok {
			for _, k := range keys(o) {
				c.Add(k)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj interface{}) { add(obj) }, DeleteFunc: add}
}

// ByName is a keys function for Handler: an object's name.
func ByName(obj *unstructured.Unstructured) []string { return []string{obj.GetName()} }
