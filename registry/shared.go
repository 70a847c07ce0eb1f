package registry

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// SharedStorage says that a resource's objects are another resource's: kept under the
// owner's keys and in its stored form, and served in the sharing resource's versions
// too, as kube-apiserver keeps events.k8s.io Events as core v1 Events. What is
// written through either resource is read, listed and watched through both, as one
// object (name, uid, resourceVersion).
//
// The owner's StorageVersion entry, storage migrations and checks cover the objects:
// the sharing resource has none of its own, and reports the owner's stored form as its
// storage version hash.
type SharedStorage struct {
	// Owner is the resource whose keys hold the objects.
	Owner schema.GroupResource
	// Stored is the group, version and kind the objects are stored in: the owner's
	// storage version.
	Stored schema.GroupVersionKind
	// ToStored converts obj, in one of the sharing resource's versions, to Stored in
	// place; FromStored converts obj, in Stored, to the sharing resource's version.
	ToStored   func(ctx context.Context, obj *Object) error
	FromStored func(ctx context.Context, obj *Object, version string) error
}

// storedAPIVersion is the apiVersion objects of r are stored in.
func (r *Resource) storedAPIVersion() string {
	if r.Shared != nil {
		return r.Shared.Stored.GroupVersion().String()
	}
	return r.APIVersion(r.StorageVersion)
}

// storedKind is the kind objects of r are stored as.
func (r *Resource) storedKind() string {
	if r.Shared != nil {
		return r.Shared.Stored.Kind
	}
	return r.Names.Kind
}

// toStored converts out, a copy the caller owns in any decodable version, to the
// stored form.
func (r *Resource) toStored(ctx context.Context, out *Object) error {
	switch {
	case r.Shared == nil:
		return r.Convert(ctx, []*Object{out}, r.StorageVersion)
	case out.GetAPIVersion() == r.storedAPIVersion():
		return nil
	}
	if err := r.Convert(ctx, []*Object{out}, r.StorageVersion); err != nil {
		return err
	}
	if err := r.Shared.ToStored(ctx, out); err != nil {
		return fmt.Errorf("%s as %s: %w", r.GroupResource(), r.Shared.Stored, err)
	}
	return nil
}

// ErrNotShared means an object was to be converted to a group-version of a resource
// that does not share its storage.
var ErrNotShared = errors.New("no resource of that group shares its storage")

// ConvertAcross converts obj, an object of res in any of its decodable versions, to
// gv in place: a version of res, or of a resource sharing res's storage, or of the
// owner of the storage res shares. The one object served in two groups (core and
// events.k8s.io Events) converts between them through its stored form, as kube
// converts through its internal version: server-side apply meets both groups'
// managed fields on one object.
func (r *Registry) ConvertAcross(ctx context.Context, res *Resource, obj *Object, gv schema.GroupVersion) error {
	if gv.Group == res.Group {
		return res.Convert(ctx, []*Object{obj}, gv.Version)
	}
	if res.Shared != nil && res.Shared.Owner.Group == gv.Group {
		owner := r.Get(res.Shared.Owner)
		if owner == nil {
			return fmt.Errorf("%w: %s shares %s, which is not served", ErrNotShared, res.GroupResource(), res.Shared.Owner)
		}
		if err := res.toStored(ctx, obj); err != nil {
			return err
		}
		return owner.Convert(ctx, []*Object{obj}, gv.Version)
	}
	for _, sharer := range r.Resources() {
		if sharer.Shared != nil && sharer.Shared.Owner == res.GroupResource() && sharer.Group == gv.Group {
			if err := res.Convert(ctx, []*Object{obj}, sharer.Shared.Stored.Version); err != nil {
				return err
			}
			return sharer.Convert(ctx, []*Object{obj}, gv.Version)
		}
	}
	return fmt.Errorf("%w: %s to %s", ErrNotShared, res.GroupResource(), gv)
}
