package kubesemantics

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/typedconv"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
)

// Semantics give built-in resources Kubernetes' own semantics under one server's
// feature gates.
type Semantics struct {
	gates *Gates
}

// New returns the semantics of a server whose Kubernetes feature gates are gates.
func New(gates *Gates) *Semantics { return &Semantics{gates: gates} }

// ForServer returns the semantics of a server of compat: kube's gates at its
// emulation and minimum compatibility versions, following its own gates (NewGates).
func ForServer(compat *compatibility.Config) (*Semantics, error) {
	gates, err := NewGates(compat.Versions.Emulation, compat.Versions.MinCompatibility, compat.FeatureGate())
	if err != nil {
		return nil, err
	}
	return New(gates), nil
}

// groups are the strategies of each API group, by resource: each group's file adds
// its own at init.
var groups []func() map[schema.GroupResource]strategy

// strategies are Concord's strategies for built-in resources, by resource.
var strategies = sync.OnceValue(func() map[schema.GroupResource]*strategy {
	out := map[schema.GroupResource]*strategy{}
	for _, group := range groups {
		for gr, s := range group() {
			if _, dup := out[gr]; dup {
				panic(fmt.Sprintf("kubesemantics: two strategies for %s", gr))
			}
			out[gr] = &s
		}
	}
	return out
})

// Configure gives r Kubernetes' defaults, preparation and validation
// (registry.Semantics), kube's conversion between its versions and kube's Table
// columns, if this package has a strategy for it and kube's scheme knows every
// version of it that is served or stored, and reports whether it did. A version kube
// has removed (networking.k8s.io/v1alpha1, HorizontalPodAutoscalers' v2beta1 and
// v2beta2) may stay in the catalog for old releases, unserved and not stored: no
// request reads or writes it, and objects of it keep the resource's former
// conversion (the catalog's).
func (s *Semantics) Configure(r *registry.Resource) bool {
	st, ok := strategies()[r.GroupResource()]
	if !ok {
		return false
	}
	k := &typedResource{sem: s, res: r, s: st}
	kubeKnowsAll := true
	for _, v := range r.Versions {
		if !k.knows(v.Name) {
			if v.Served || v.Name == r.StorageVersion {
				return false
			}
			kubeKnowsAll = false
		}
	}
	r.Semantics = &registry.Semantics{Default: k.defaults, Create: k.create, Update: k.update, New: k.empty, Invalid: k.invalid()}
	r.TypeConverter = typeConverter
	r.Semantics.ResetFields = resetFields[r.GroupResource()]
	r.Shared = k.shared()
	r.GoDefinitions = goDefinitions
	r.Semantics.Subresources = s.subresources(st)
	if st.binding {
		r.Semantics.Writes = []string{"binding"}
	}
	if len(r.Versions) > 1 {
		c := converter{k: k}
		if !kubeKnowsAll {
			c.others = r.Converter
		}
		r.Converter = c
	}
	if _, err := k.columns(); err == nil {
		r.Semantics.Table = k.table
	}
	return true
}

// subresources are the names of st's subresources the server's gates serve, sorted.
func (s *Semantics) subresources(st *strategy) []string {
	var out []string
	for name, sub := range st.subresources {
		if sub.gate == "" || s.gates.gate.Enabled(sub.gate) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// typedResource runs one resource's objects through kube's types.
type typedResource struct {
	sem *Semantics
	res *registry.Resource
	s   *strategy
}

// defaults applies kube's defaults of version to obj and gives it as kube-apiserver
// decodes a request's object: through kube's internal version and back, whose
// conversion has its own say (a Secret's stringData joins its data; a DaemonSet
// carries its template generation as an annotation). What server-side apply records
// of a write is then what kube records.
func (k *typedResource) defaults(version string, obj *registry.Object) error {
	ext, err := k.external(version, obj)
	if err != nil {
		return err
	}
	var internal runtime.Object
	k.sem.gates.Do(func() {
		legacyscheme.Scheme.Default(ext)
		internal, err = legacyscheme.Scheme.UnsafeConvertToVersion(ext, runtime.InternalGroupVersioner)
	})
	if err != nil {
		return fmt.Errorf("converting %s to kube's internal version: %w", k.res.GroupResource(), err)
	}
	return k.storeInternal(internal, version, obj, false)
}

// create prepares and validates a new object as kube-apiserver's create handler
// does (rest.BeforeCreate, but for what Concord's store does itself: metadata, the
// namespace).
func (k *typedResource) create(ctx context.Context, version string, obj *registry.Object) (field.ErrorList, error) {
	ext, err := k.external(version, obj)
	if err != nil {
		return nil, err
	}
	internal, err := legacyscheme.Scheme.UnsafeConvertToVersion(ext, runtime.InternalGroupVersioner)
	if err != nil {
		return nil, fmt.Errorf("converting %s to kube's internal version: %w", k.res.GroupResource(), err)
	}
	strat := newAdapter(k.s, k.res.Namespaced, "")
	ctx = k.requestContext(ctx, version, "create", "", obj.GetNamespace(), obj.GetName())
	var errs field.ErrorList
	k.sem.gates.Do(func() {
		strat.PrepareForCreate(ctx, internal)
		if errs = validateCreate(ctx, internal, strat); len(errs) == 0 {
			for _, w := range strat.WarningsOnCreate(ctx, internal) {
				warning.AddWarning(ctx, "", w)
			}
			strat.Canonicalize(internal)
		}
	})
	if err := k.storeInternal(internal, version, obj, true); err != nil {
		return nil, err
	}
	return errs, nil
}

// validateCreate validates a new object as kube's create handler does, but a review
// as its own handler does: by the review's rules alone.
func validateCreate(ctx context.Context, obj runtime.Object, strat *adapter) field.ErrorList {
	if !strat.s.review {
		return rest.ValidateCreate(ctx, obj, strat)
	}
	errs := strat.Validate(ctx, obj)
	return strat.ValidateDeclaratively(ctx, obj, nil, errs, operation.Create, strat.DeclarativeValidationConfig(ctx, obj, nil))
}

// update prepares and validates obj, an update of old or of its status or another
// subresource of its strategy, as kube-apiserver's update handler does (rest.BeforeUpdate, but for
// the metadata Concord's store carries over itself).
func (k *typedResource) update(ctx context.Context, version, subresource string, obj, old *registry.Object) (field.ErrorList, error) {
	ext, err := k.external(version, obj)
	if err != nil {
		return nil, err
	}
	oldExt, err := k.external(version, old)
	if err != nil {
		return nil, fmt.Errorf("the stored object: %w", err)
	}
	internal, err := legacyscheme.Scheme.UnsafeConvertToVersion(ext, runtime.InternalGroupVersioner)
	if err != nil {
		return nil, fmt.Errorf("converting %s to kube's internal version: %w", k.res.GroupResource(), err)
	}
	oldInternal, err := legacyscheme.Scheme.UnsafeConvertToVersion(oldExt, runtime.InternalGroupVersioner)
	if err != nil {
		return nil, fmt.Errorf("converting the stored %s to kube's internal version: %w", k.res.GroupResource(), err)
	}
	strat := newAdapter(k.s, k.res.Namespaced, subresource)
	ctx = k.requestContext(ctx, version, "update", subresource, obj.GetNamespace(), obj.GetName())
	var errs field.ErrorList
	k.sem.gates.Do(func() {
		if subresource == "binding" {
			return // kube's binding writes the Pod to storage as it is
		}
		strat.PrepareForUpdate(ctx, internal, oldInternal)
		if errs = rest.ValidateUpdate(ctx, internal, oldInternal, strat); len(errs) == 0 {
			for _, w := range strat.WarningsOnUpdate(ctx, internal, oldInternal) {
				warning.AddWarning(ctx, "", w)
			}
			strat.Canonicalize(internal)
		}
	})
	if err := k.storeInternal(internal, version, obj, true); err != nil {
		return nil, err
	}
	return errs, nil
}

// empty returns the empty object of version as kube's Go type writes it: its struct
// fields present, each {}.
func (k *typedResource) empty(version string) (*registry.Object, error) {
	gvk := k.res.GroupVersion(version).WithKind(k.res.Names.Kind)
	out, err := legacyscheme.Scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("kube's type of %s: %w", gvk, err)
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	obj := &registry.Object{}
	return obj, k.store(out, obj)
}

// external returns obj as kube's Go type of version.
func (k *typedResource) external(version string, obj *registry.Object) (runtime.Object, error) {
	return typed(k.res.GroupVersion(version).WithKind(k.res.Names.Kind), obj.Object)
}

// typed returns content, an object of gvk, as kube's Go type of gvk.
func typed(gvk schema.GroupVersionKind, content map[string]any) (runtime.Object, error) {
	out, err := legacyscheme.Scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("kube's type of %s: %w", gvk, err)
	}
	if err := typedconv.FromUnstructured(content, out); err != nil {
		return nil, fmt.Errorf("%s as kube's type: %w", gvk, err)
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return out, nil
}

// storeInternal writes internal, converted to version, into obj; internal is not
// used after (the conversion may share its memory, and defaults may change it: every
// typed object here is a conversion's own, none the caller's). kube's types write
// a status they do not have as {}: where the status is a field the minimum
// compatibility release lacks (a CSINode's, new in 1.37), an empty one is left out,
// as it holds nothing that release would lose and the store writes none.
//
// With defaulted, kube's defaults of version are applied once more, as to an object
// prepared for a write: kube-apiserver answers a write with the object as it reads
// it back from etcd, defaulted when decoded, so what its strategy reset (a claim's
// status) shows its defaults (phase Pending). Concord reads stored objects as they
// are, so it stores them defaulted.
func (k *typedResource) storeInternal(internal runtime.Object, version string, obj *registry.Object, defaulted bool) error {
	ext, err := legacyscheme.Scheme.UnsafeConvertToVersion(internal, k.res.GroupVersion(version))
	if err != nil {
		return fmt.Errorf("converting %s from kube's internal version to %s: %w", k.res.GroupResource(), version, err)
	}
	if defaulted {
		k.sem.gates.Do(func() { legacyscheme.Scheme.Default(ext) })
	}
	if err := k.store(ext, obj); err != nil {
		return err
	}
	if status, ok := obj.Object["status"].(map[string]any); ok && len(status) == 0 && k.newStatus(version) {
		delete(obj.Object, "status")
	}
	return nil
}

// newStatus reports whether version's status is a field the minimum compatibility
// release lacks.
func (k *typedResource) newStatus(version string) bool {
	v := k.res.Version(version)
	if v == nil {
		return false
	}
	for _, f := range v.NewFields {
		if len(f.Path) == 1 && f.Path[0] == "status" {
			return true
		}
	}
	return false
}

// store writes ext into obj.
func (k *typedResource) store(ext runtime.Object, obj *registry.Object) error {
	m, err := typedconv.ToUnstructured(ext)
	if err != nil {
		return fmt.Errorf("%s from kube's type: %w", k.res.GroupResource(), err)
	}
	*obj = unstructured.Unstructured{Object: m}
	return nil
}

// requestContext is ctx as kube's strategies and declarative validation read it: the
// request's information and namespace, and its user.
func (k *typedResource) requestContext(ctx context.Context, version, verb, subresource, namespace, name string) context.Context {
	info := &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: verb,
		APIGroup: k.res.Group, APIVersion: version, Resource: k.res.Names.Plural,
		Subresource: subresource, Namespace: namespace, Name: name,
	}
	// A storage-migration rewrite names the resource but no version: its objects are
	// validated in version.
	if ri, ok := request.InfoFrom(ctx); ok && ri.IsResourceRequest && ri.Resource == k.res.Names.Plural && ri.APIGroup == k.res.Group && ri.APIVersion != "" {
		info.Verb, info.APIVersion, info.Path = ri.Verb, ri.APIVersion, ri.Path
	}
	ctx = genericapirequest.WithRequestInfo(genericapirequest.WithNamespace(ctx, namespace), info)
	if u, ok := auth.UserFrom(ctx); ok {
		ctx = genericapirequest.WithUser(ctx, u.Info())
	}
	return ctx
}

// FeatureGate returns the server's Kubernetes feature gates (for code that takes a
// gate, as admission plugins do: kube's own code reads them within Gates.Do).
func (s *Semantics) FeatureGate() featuregate.FeatureGate { return s.gates.gate }

// invalid returns what kube's Invalid errors of the resource name, as its registry
// names them: the first kind kube's scheme gives its internal type (core's Event for
// the events.k8s.io Events, which share that type) and the object's name; for the
// access reviews, whose endpoints word their own errors, neither a kind nor a name.
func (k *typedResource) invalid() func(*registry.Object) (schema.GroupKind, string) {
	if k.s.review {
		gk := schema.GroupKind{Group: k.res.Group}
		return func(*registry.Object) (schema.GroupKind, string) { return gk, "" }
	}
	gk := k.res.GroupKind()
	if obj, err := legacyscheme.Scheme.New(gk.WithVersion(runtime.APIVersionInternal)); err == nil {
		if kinds, _, err := legacyscheme.Scheme.ObjectKinds(obj); err == nil && len(kinds) > 0 {
			gk = kinds[0].GroupKind()
		}
	}
	return func(obj *registry.Object) (schema.GroupKind, string) { return gk, obj.GetName() }
}
