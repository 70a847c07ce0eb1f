package kubesemantics

import (
	"context"
	"fmt"

	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
)

// converter converts a built-in resource's objects between its versions as
// kube-apiserver does: through kube's internal version, with kube's conversion
// functions (autoscaling/v1's targetCPUUtilizationPercentage becomes autoscaling/v2's
// CPU metric and back). It implements registry.Converter.
type converter struct {
	k *typedResource
	// others, if set, converts what kube's scheme cannot: objects of a version it no
	// longer has (one the catalog keeps for old releases) or into one. It is the
	// resource's converter before kube's.
	others registry.Converter
}

// Convert rewrites every object of objs into toVersion, in place.
func (c converter) Convert(ctx context.Context, objs []*registry.Object, toVersion string) error {
	target := c.k.res.GroupVersion(toVersion)
	for _, obj := range objs {
		if obj.GetAPIVersion() == target.String() {
			continue
		}
		from := obj.GroupVersionKind()
		if from.GroupKind() != c.k.res.GroupKind() || c.k.res.Version(from.Version) == nil {
			return fmt.Errorf("%w: %s is not a version of %s", registry.ErrNotConvertible, obj.GetAPIVersion(), c.k.res.GroupResource())
		}
		if c.others != nil && (!c.k.knows(from.Version) || !c.k.knows(toVersion)) {
			if err := c.others.Convert(ctx, []*registry.Object{obj}, toVersion); err != nil {
				return err
			}
			continue
		}
		ext, err := c.k.external(from.Version, obj)
		if err != nil {
			return err
		}
		var internal runtime.Object
		c.k.sem.gates.Do(func() {
			internal, err = legacyscheme.Scheme.UnsafeConvertToVersion(ext, runtime.InternalGroupVersioner)
		})
		if err != nil {
			return fmt.Errorf("converting %s/%s to kube's internal version: %w", obj.GetNamespace(), obj.GetName(), err)
		}
		if err := c.k.storeInternal(internal, toVersion, obj, false); err != nil {
			return err
		}
	}
	return nil
}

// knows reports whether kube's scheme has the resource's kind in version.
func (k *typedResource) knows(version string) bool {
	return legacyscheme.Scheme.Recognizes(k.res.GroupVersion(version).WithKind(k.res.Names.Kind))
}
