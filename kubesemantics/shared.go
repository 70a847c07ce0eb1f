package kubesemantics

import (
	"context"
	"fmt"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/typedconv"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
)

// sharedStorage are the resources kube-apiserver keeps in another resource's storage,
// in that resource's stored form: events.k8s.io Events are core v1 Events, one object
// served in both groups.
var sharedStorage = map[schema.GroupResource]struct {
	owner  schema.GroupResource
	stored schema.GroupVersionKind
}{
	{Group: "events.k8s.io", Resource: "events"}: {owner: schema.GroupResource{Resource: "events"}, stored: schema.GroupVersionKind{Version: "v1", Kind: "Event"}},
}

// shared returns the storage k's resource shares with another, converted between
// the two through kube's internal version, or nil if it has its own.
func (k *typedResource) shared() *registry.SharedStorage {
	s, ok := sharedStorage[k.res.GroupResource()]
	if !ok {
		return nil
	}
	return &registry.SharedStorage{Owner: s.owner, Stored: s.stored,
		ToStored: func(_ context.Context, obj *registry.Object) error {
			from := obj.GroupVersionKind()
			if from.GroupKind() != k.res.GroupKind() {
				return fmt.Errorf("%w: %s is not a version of %s", registry.ErrNotConvertible, obj.GetAPIVersion(), k.res.GroupResource())
			}
			return convertAcross(from, s.stored, obj)
		},
		FromStored: func(_ context.Context, obj *registry.Object, version string) error {
			return convertAcross(s.stored, k.res.GroupVersion(version).WithKind(k.res.Names.Kind), obj)
		},
	}
}

// convertAcross converts obj, of from, to to through kube's internal version: two
// kinds of different groups that are one internal type (core Event).
func convertAcross(from, to schema.GroupVersionKind, obj *registry.Object) error {
	ext, err := typed(from, obj.Object)
	if err != nil {
		return err
	}
	internal, err := legacyscheme.Scheme.ConvertToVersion(ext, runtime.InternalGroupVersioner)
	if err != nil {
		return fmt.Errorf("converting %s %s/%s to kube's internal version: %w", from, obj.GetNamespace(), obj.GetName(), err)
	}
	out, err := legacyscheme.Scheme.ConvertToVersion(internal, to.GroupVersion())
	if err != nil {
		return fmt.Errorf("converting %s/%s to %s: %w", obj.GetNamespace(), obj.GetName(), to, err)
	}
	m, err := typedconv.ToUnstructured(out)
	if err != nil {
		return fmt.Errorf("%s from kube's type: %w", to, err)
	}
	obj.Object = m
	obj.SetGroupVersionKind(to)
	return nil
}
