package registry

import (
	"context"
	"fmt"
	"sync"

	"github.com/concordproject/concord/schema"
	"github.com/concordproject/concord/typedconv"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Object is an object of any resource, as the registry and the store handle it.
type Object = unstructured.Unstructured

// prepared holds what a Resource compiles once: its versions' schemas.
type prepared struct {
	// schemas return the versions' compiled schemas, compiled at Prepare or, for a
	// version given Compiled, on first use.
	schemas map[string]func() *schema.Schema
	// cache holds what other packages derive from this definition (field managers,
	// table converters, ...), so that it is dropped together with the definition.
	cache sync.Map
}

// Cached returns the value cached under key for this definition, building and storing
// it on first use. Concurrent first uses may build twice; one result wins. Errors are
// not cached.
func (r *Resource) Cached(key any, build func() (any, error)) (any, error) {
	if r.prepared == nil {
		return build()
	}
	if v, ok := r.prepared.cache.Load(key); ok {
		return v, nil
	}
	v, err := build()
	if err != nil {
		return nil, err
	}
	v, _ = r.prepared.cache.LoadOrStore(key, v)
	return v, nil
}

// Prepare checks the definition (see Validate) and compiles every version's schema
// (but those given Compiled, left to their first use). Registry.Put calls it; a
// Resource used outside a Registry must be prepared before objects are written
// through it. It must not be called on a Resource already in use.
func (r *Resource) Prepare(ctx context.Context) error {
	if err := r.Validate(); err != nil {
		return err
	}
	p := &prepared{schemas: map[string]func() *schema.Schema{}}
	for _, v := range r.Versions {
		if v.Compiled != nil {
			p.schemas[v.Name] = compiledOnUse(r.GroupResource(), v.Name, v.Compiled)
			continue
		}
		if v.Schema == nil {
			continue
		}
		s, err := schema.Compile(ctx, v.Schema, field.NewPath("spec", "versions").Key(v.Name).Child("schema", "openAPIV3Schema"))
		if err != nil {
			return fmt.Errorf("resource %s version %s: %w", r.GroupResource(), v.Name, err)
		}
		p.schemas[v.Name] = func() *schema.Schema { return s }
	}
	r.prepared = p
	return nil
}

// compiledOnUse returns the schema compiled returns, calling it on every use (it
// compiles once: Version.Compiled). A compilation its caller vouched for that fails
// is a defect of the binary, not of a request: it panics.
func compiledOnUse(gr runtimeschema.GroupResource, version string, compiled func() (*schema.Schema, error)) func() *schema.Schema {
	return func() *schema.Schema {
		s, err := compiled()
		if err != nil {
			panic(fmt.Sprintf("resource %s version %s: its schema does not compile: %v", gr, version, err))
		}
		return s
	}
}

// Schema returns the compiled schema of version v, or nil if the version has none
// (or the resource was not prepared).
func (r *Resource) Schema(v string) *schema.Schema {
	if r.prepared == nil {
		return nil
	}
	if s, ok := r.prepared.schemas[v]; ok {
		return s()
	}
	return nil
}

// Default applies the defaults of version to obj: its Semantics' where it has them,
// else its schema's, then its hook's.
func (r *Resource) Default(version string, obj *Object) error {
	if r.Semantics != nil {
		return r.Semantics.Default(version, obj)
	}
	r.Schema(version).Default(obj.Object)
	if r.Hooks != nil && r.Hooks.Default != nil {
		r.Hooks.Default(version, obj)
	}
	return nil
}

// TypedDefaults reports whether the resource's defaults are those of its Go types
// (its Semantics', or its Default hook's) rather than its schema's. kube-apiserver
// applies them to every object it decodes, but not to an apply configuration, which
// server-side apply reads as sent.
func (r *Resource) TypedDefaults() bool {
	return r.Semantics != nil || (r.Hooks != nil && r.Hooks.Default != nil)
}

// invalid is the Invalid error of errs about obj, nil if there are none.
func (r *Resource) invalid(obj *Object, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	gk, name := r.GroupKind(), obj.GetName()
	if r.Semantics != nil && r.Semantics.Invalid != nil {
		gk, name = r.Semantics.Invalid(obj)
	}
	return apierrors.NewInvalid(gk, name, errs)
}

// GroupKind returns the resource's group and kind.
func (r *Resource) GroupKind() runtimeschema.GroupKind {
	return runtimeschema.GroupKind{Group: r.Group, Kind: r.Names.Kind}
}

func (r *Resource) nameFunc() apimachineryvalidation.ValidateNameFunc {
	if r.Hooks != nil && r.Hooks.ValidateName != nil {
		return r.Hooks.ValidateName
	}
	return apimachineryvalidation.NameIsDNSSubdomain
}

// ValidateCreate runs metadata, schema and hook validation of a new object in version;
// for a resource with Semantics, their preparation and validation in place of the
// first two.
func (r *Resource) ValidateCreate(ctx context.Context, version string, obj *Object) error {
	var errs, schemaErrs field.ErrorList
	if r.Semantics != nil {
		var err error
		if schemaErrs, err = r.Semantics.Create(ctx, version, obj); err != nil {
			return err // not the object's fault: kube's 500 without a reason
		}
	} else {
		errs = apimachineryvalidation.ValidateObjectMetaAccessor(convertedOnce(obj), r.Namespaced, r.nameFunc(), field.NewPath("metadata"))
		schemaErrs = r.Schema(version).Validate(ctx, obj.Object)
	}
	if v := r.Version(version); v != nil {
		schemaErrs = append(schemaErrs, newFieldErrors(v.NewFields, obj.Object, nil)...)
	}
	var hookErrs field.ErrorList
	if r.Hooks != nil && r.Hooks.Validate != nil {
		hookErrs = r.Hooks.Validate(ctx, obj)
	}
	errs = append(errs, supersede(schemaErrs, hookErrs)...)
	return r.invalid(obj, errs)
}

// ValidateUpdate runs metadata (including immutability), schema and hook validation
// of an update in version of the main resource ("" subresource) or of its status; for
// a resource with Semantics, their preparation and validation in place of the first
// two.
func (r *Resource) ValidateUpdate(ctx context.Context, version, subresource string, obj, old *Object) error {
	var errs, schemaErrs, hookErrs field.ErrorList
	switch {
	case r.Semantics != nil:
		var err error
		if schemaErrs, err = r.Semantics.Update(ctx, version, subresource, obj, old); err != nil {
			return err // not the object's fault: kube's 500 without a reason
		}
	default:
		meta := convertedOnce(obj)
		errs = apimachineryvalidation.ValidateObjectMetaAccessor(meta, r.Namespaced, r.nameFunc(), field.NewPath("metadata"))
		errs = append(errs, apimachineryvalidation.ValidateObjectMetaAccessorUpdate(meta, old, field.NewPath("metadata"))...)
		if r.NoRatcheting {
			schemaErrs = r.Schema(version).ValidateUpdateWithoutRatcheting(ctx, obj.Object, old.Object)
		} else {
			schemaErrs = r.Schema(version).ValidateUpdate(ctx, obj.Object, old.Object)
		}
	}
	if v := r.Version(version); v != nil {
		schemaErrs = append(schemaErrs, newFieldErrors(v.NewFields, obj.Object, old.Object)...)
	}
	if r.Hooks != nil && r.Hooks.ValidateUpdate != nil {
		hookErrs = r.Hooks.ValidateUpdate(ctx, obj, old)
	}
	errs = append(errs, supersede(schemaErrs, hookErrs)...)
	return r.invalid(obj, errs)
}

// supersede returns the schema's errors and the hooks': a hook that checks a field
// itself (Kubernetes' own validation of a built-in resource, ported) has the last word
// on an unsupported value there, so the schema's enum error at that field is dropped,
// and the client reads Kubernetes' one message.
func supersede(schemaErrs, hookErrs field.ErrorList) field.ErrorList {
	if len(hookErrs) == 0 {
		return schemaErrs
	}
	checked := map[string]bool{}
	for _, e := range hookErrs {
		checked[e.Field] = true
	}
	out := make(field.ErrorList, 0, len(schemaErrs)+len(hookErrs))
	for _, e := range schemaErrs {
		if e.Type != field.ErrorTypeNotSupported || !checked[e.Field] {
			out = append(out, e)
		}
	}
	return append(out, hookErrs...)
}

// managedOnce is an object as metadata validation reads it, its managedFields
// converted to metav1.ManagedFieldsEntry once: apimachinery's validation asks for them
// three times per update, and each conversion from the map is a reflective one.
type managedOnce struct {
	*Object
	managed []metav1.ManagedFieldsEntry
}

func convertedOnce(obj *Object) managedOnce {
	return managedOnce{Object: obj, managed: typedconv.ManagedFields(obj.Object)}
}

// GetManagedFields returns the entries converted once; callers must not modify them.
func (m managedOnce) GetManagedFields() []metav1.ManagedFieldsEntry { return m.managed }
