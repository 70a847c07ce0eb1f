package registry

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Objects gives the registry's resources the runtime interfaces that code written for
// typed schemes expects (k8s.io/apiserver's admission plugins among them): objects are
// *unstructured.Unstructured of any served kind, created empty, defaulted by their
// version's schema, converted by their resource's converter, and versions of one
// resource are its equivalents. It is what admission.ObjectInterfaces asks for.
type Objects struct{ reg *Registry }

// Objects returns the runtime interfaces of the registry's resources as they are at
// each call.
func (r *Registry) Objects() *Objects { return &Objects{reg: r} }

var (
	_ runtime.ObjectCreater            = (*Objects)(nil)
	_ runtime.ObjectTyper              = (*Objects)(nil)
	_ runtime.ObjectDefaulter          = (*Objects)(nil)
	_ runtime.ObjectConvertor          = (*Objects)(nil)
	_ runtime.EquivalentResourceMapper = (*Objects)(nil)
)

// GetObjectCreater returns o. With GetObjectTyper, GetObjectDefaulter,
// GetObjectConvertor and GetEquivalentResourceMapper, it makes o an
// admission.ObjectInterfaces.
func (o *Objects) GetObjectCreater() runtime.ObjectCreater { return o }

// GetObjectTyper returns o.
func (o *Objects) GetObjectTyper() runtime.ObjectTyper { return o }

// GetObjectDefaulter returns o.
func (o *Objects) GetObjectDefaulter() runtime.ObjectDefaulter { return o }

// GetObjectConvertor returns o.
func (o *Objects) GetObjectConvertor() runtime.ObjectConvertor { return o }

// GetEquivalentResourceMapper returns o.
func (o *Objects) GetEquivalentResourceMapper() runtime.EquivalentResourceMapper { return o }

// ByKind returns the resource whose kind gk is (the first in group, plural order if
// several claim it), or nil.
func (r *Registry) ByKind(gk schema.GroupKind) *Resource {
	for _, res := range r.Resources() {
		if res.Group == gk.Group && res.Names.Kind == gk.Kind {
			return res
		}
	}
	return nil
}

// New returns an empty unstructured object of gvk, if a resource has that kind in
// that version.
func (o *Objects) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if !o.Recognizes(gvk) {
		return nil, runtime.NewNotRegisteredErrForKind("concord", gvk)
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// ObjectKinds returns the kind an unstructured object says it is.
func (o *Objects) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, false, runtime.NewNotRegisteredErrForType("concord", reflect.TypeOf(obj))
	}
	return []schema.GroupVersionKind{u.GroupVersionKind()}, false, nil
}

// Recognizes reports whether a resource has kind gvk in a version it can decode.
func (o *Objects) Recognizes(gvk schema.GroupVersionKind) bool {
	res := o.reg.ByKind(gvk.GroupKind())
	return res != nil && res.Version(gvk.Version) != nil
}

// Default applies the defaults of the object's version (Resource.Default). An
// object its Semantics cannot default is left as it is: runtime.ObjectDefaulter
// reports no error, and validation refuses what is wrong with it.
func (o *Objects) Default(obj runtime.Object) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	gvk := u.GroupVersionKind()
	if res := o.reg.ByKind(gvk.GroupKind()); res != nil && res.Version(gvk.Version) != nil {
		_ = res.Default(gvk.Version, u)
	}
}

// Convert writes in into out, converted to the version out names (in's own if out
// names none): both must be unstructured objects of one resource.
func (o *Objects) Convert(in, out, _ interface{}) error {
	src, ok1 := in.(*unstructured.Unstructured)
	dst, ok2 := out.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return fmt.Errorf("%w: %T to %T", ErrNotConvertible, in, out)
	}
	want := dst.GroupVersionKind()
	converted := src.DeepCopy()
	if want.Version != "" && want.GroupVersion() != src.GroupVersionKind().GroupVersion() {
		var err error
		if converted, err = o.convert(converted, want.GroupVersion()); err != nil {
			return err
		}
	}
	dst.Object = converted.Object
	return nil
}

// ConvertToVersion returns in converted to the version target picks for its kind.
func (o *Objects) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("%w: %T", ErrNotConvertible, in)
	}
	gvk, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{u.GroupVersionKind()})
	if !ok {
		return nil, fmt.Errorf("%w: no version of %v in %v", ErrNotConvertible, u.GroupVersionKind(), target)
	}
	return o.convert(u.DeepCopy(), gvk.GroupVersion())
}

// convert converts u, in place, to gv.
func (o *Objects) convert(u *unstructured.Unstructured, gv schema.GroupVersion) (*unstructured.Unstructured, error) {
	res := o.reg.ByKind(u.GroupVersionKind().GroupKind())
	if res == nil || res.Version(gv.Version) == nil || res.Group != gv.Group {
		return nil, fmt.Errorf("%w: %v to %v", ErrNotConvertible, u.GroupVersionKind(), gv)
	}
	// runtime.ObjectConvertor has no context; a conversion webhook bounds its own calls.
	if err := res.Convert(context.TODO(), []*unstructured.Unstructured{u}, gv.Version); err != nil { //nolint:forbidigo // see above
		return nil, err
	}
	return u, nil
}

// ConvertFieldLabel leaves field labels as they are: every version's are the same.
func (o *Objects) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// EquivalentResourcesFor returns every decodable version of the resource of gvr, the
// same data seen through each version.
func (o *Objects) EquivalentResourcesFor(gvr schema.GroupVersionResource, _ string) []schema.GroupVersionResource {
	res := o.reg.Get(gvr.GroupResource())
	if res == nil {
		return nil
	}
	out := make([]schema.GroupVersionResource, 0, len(res.Versions))
	for _, v := range res.ServedVersions() {
		out = append(out, res.GroupVersion(v).WithResource(res.Names.Plural))
	}
	return out
}

// KindFor returns the kind of gvr's objects, or of its subresource's (the scale
// subresource speaks autoscaling/v1 Scale).
func (o *Objects) KindFor(gvr schema.GroupVersionResource, subresource string) schema.GroupVersionKind {
	res := o.reg.Get(gvr.GroupResource())
	if res == nil {
		return schema.GroupVersionKind{}
	}
	if subresource == "scale" {
		return schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}
	}
	return res.GroupVersion(gvr.Version).WithKind(res.Names.Kind)
}

// ErrNotConvertible means an object is not of a kind or version the registry converts.
var ErrNotConvertible = errors.New("cannot convert")
