package registry

import (
	"context"
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
