package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/concordproject/concord/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
)

var (
	// errUnknownKind: a reference names a kind (in its version) no served resource
	// has. It may be served later (a CRD not yet established): retried.
	errUnknownKind = errors.New("no served resource has this kind in this version")
	// errClusterScopedDependent: a cluster-scoped object names a namespaced owner,
	// which cannot be resolved: never retried.
	errClusterScopedDependent = errors.New("cluster-scoped objects cannot refer to namespaced owners")
)

// objects reads and writes the objects the collector works on through the API (the
// server's loopback), as Kubernetes' garbage collector does through its metadata
// client: every deletion and owner-reference change is an API request, authorized,
// admitted and audited like any other.
type objects struct {
	registry *registry.Registry
	client   metadata.Interface
	monitors *monitors
}

// resource returns the resource of apiVersion and kind, and whether it is
// namespaced.
func (o *objects) resource(apiVersion, kind string) (schema.GroupVersionResource, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("%w: %s %s: %w", errUnknownKind, apiVersion, kind, err)
	}
	res := o.registry.ByKind(gv.WithKind(kind).GroupKind())
	if res == nil || res.ServedVersion(gv.Version) == nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("%w: %s %s", errUnknownKind, apiVersion, kind)
	}
	return gv.WithResource(res.Names.Plural), res.Namespaced, nil
}

// client returns the client of r's resource, in r's namespace if it is namespaced.
func (o *objects) resourceClient(r objectRef) (metadata.ResourceInterface, error) {
	gvr, namespaced, err := o.resource(r.APIVersion, r.Kind)
	if err != nil {
		return nil, err
	}
	if !namespaced {
		return o.client.Resource(gvr), nil
	}
	if r.Namespace == "" {
		// Only a cluster-scoped object's reference gives a namespaced owner no namespace.
		return nil, errClusterScopedDependent
	}
	return o.client.Resource(gvr).Namespace(r.Namespace), nil
}

// get reads r's metadata (by name: the uid is the caller's to compare).
func (o *objects) get(ctx context.Context, r objectRef) (*metav1.PartialObjectMetadata, error) {
	c, err := o.resourceClient(r)
	if err != nil {
		return nil, err
	}
	return c.Get(ctx, r.Name, metav1.GetOptions{})
}

// getAt reads r's metadata as it was at revision rev (by name; nil if there was no
// such object then).
func (o *objects) getAt(ctx context.Context, r objectRef, rev int64) (*metav1.PartialObjectMetadata, error) {
	c, err := o.resourceClient(r)
	if err != nil {
		return nil, err
	}
	list, err := c.List(ctx, metav1.ListOptions{
		FieldSelector:        fields.OneTermEqualSelector("metadata.name", r.Name).String(),
		ResourceVersion:      strconv.FormatInt(rev, 10),
		ResourceVersionMatch: metav1.ResourceVersionMatchExact,
	})
	if err != nil || len(list.Items) == 0 {
		return nil, err
	}
	return &list.Items[0], nil
}

// delete deletes r with policy, on condition that it is still r (uid) and, if rv is
// set, unchanged since rv. If only something other than its owner references
// changed since rv (owners are them at rv), it is deleted anyway, so that frequent
// unrelated updates do not starve the collector.
func (o *objects) delete(ctx context.Context, r objectRef, rv string, owners []metav1.OwnerReference, policy metav1.DeletionPropagation) error {
	c, err := o.resourceClient(r)
	if err != nil {
		return err
	}
	pre := &metav1.Preconditions{UID: &r.UID}
	if rv != "" {
		pre.ResourceVersion = &rv
	}
	err = c.Delete(ctx, r.Name, metav1.DeleteOptions{Preconditions: pre, PropagationPolicy: &policy})
	if !apierrors.IsConflict(err) || rv == "" {
		return err
	}
	live, lerr := c.Get(ctx, r.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(lerr) {
		return lerr
	}
	if lerr == nil && live.UID == r.UID && live.ResourceVersion != rv && reflect.DeepEqual(live.OwnerReferences, owners) {
		pre.ResourceVersion = nil
		return c.Delete(ctx, r.Name, metav1.DeleteOptions{Preconditions: pre, PropagationPolicy: &policy})
	}
	return err
}

// metadataPatch is a JSON merge patch of an object's owner references or finalizers,
// conditional on its resourceVersion.
type metadataPatch struct {
	Metadata struct {
		ResourceVersion string                   `json:"resourceVersion"`
		OwnerReferences *[]metav1.OwnerReference `json:"ownerReferences,omitempty"`
		Finalizers      *[]string                `json:"finalizers,omitempty"`
	} `json:"metadata"`
}

// updateOwners changes r's owner references with change, which returns them changed
// and whether there is a change to write. It starts from cur (r as the caller read
// it; nil: as the monitor saw it last, else as read now) and, if that was stale,
// tries once more from what the API reads now. It returns r as changed (as read if
// there was nothing to change), or nil if r is gone.
func (o *objects) updateOwners(ctx context.Context, r objectRef, cur *metav1.PartialObjectMetadata, change func([]metav1.OwnerReference) ([]metav1.OwnerReference, bool)) (*metav1.PartialObjectMetadata, error) {
	if cur == nil {
		cur = o.monitors.cached(schema.FromAPIVersionAndKind(r.APIVersion, r.Kind).GroupKind(), r.Namespace, r.Name)
	}
	for attempt := 0; ; attempt++ {
		if cur == nil || cur.UID != r.UID {
			var err error
			if cur, err = o.get(ctx, r); apierrors.IsNotFound(err) {
				return nil, nil
			} else if err != nil {
				return nil, err
			}
			if cur.UID != r.UID {
				return nil, nil
			}
		}
		owners, ok := change(slices.Clone(cur.OwnerReferences))
		if !ok {
			return cur, nil
		}
		if len(owners) == 0 {
			owners = nil // null: the field goes
		}
		var p metadataPatch
		p.Metadata.ResourceVersion = cur.ResourceVersion
		p.Metadata.OwnerReferences = &owners
		out, err := o.patch(ctx, r, p)
		switch {
		case apierrors.IsConflict(err) && attempt == 0:
			cur = nil // read it afresh
		case apierrors.IsNotFound(err):
			return nil, nil
		default:
			return out, err
		}
	}
}

// removeFinalizer removes finalizer from r, as the API reads it now, and returns the
// revision of the change (0: r is gone, or has not the finalizer, which is no error).
func (o *objects) removeFinalizer(ctx context.Context, r objectRef, finalizer string) (int64, error) {
	cur, err := o.get(ctx, r)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if cur.UID != r.UID || !slices.Contains(cur.Finalizers, finalizer) {
		return 0, nil
	}
	fins := slices.DeleteFunc(slices.Clone(cur.Finalizers), func(f string) bool { return f == finalizer })
	if len(fins) == 0 {
		fins = nil // null: the field goes
	}
	var p metadataPatch
	p.Metadata.ResourceVersion = cur.ResourceVersion
	p.Metadata.Finalizers = &fins
	out, err := o.patch(ctx, r, p)
	switch {
	case apierrors.IsNotFound(err):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return strconv.ParseInt(out.ResourceVersion, 10, 64)
}

func (o *objects) patch(ctx context.Context, r objectRef, p metadataPatch) (*metav1.PartialObjectMetadata, error) {
	c, err := o.resourceClient(r)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return c.Patch(ctx, r.Name, types.MergePatchType, data, metav1.PatchOptions{})
}

// withoutOwners returns a change that removes the references to uids.
func withoutOwners(uids ...types.UID) func([]metav1.OwnerReference) ([]metav1.OwnerReference, bool) {
	return func(owners []metav1.OwnerReference) ([]metav1.OwnerReference, bool) {
		kept := slices.DeleteFunc(owners, func(o metav1.OwnerReference) bool { return slices.Contains(uids, o.UID) })
		return kept, len(kept) != len(owners)
	}
}

// unblocking is a change that makes every blocking reference non-blocking.
func unblocking(owners []metav1.OwnerReference) ([]metav1.OwnerReference, bool) {
	changed := false
	for i := range owners {
		if blocking(owners[i]) {
			f := false
			owners[i].BlockOwnerDeletion = &f
			changed = true
		}
	}
	return owners, changed
}
