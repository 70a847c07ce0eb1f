package apiextensions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/schema"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
)

// GroupName is the API group of CustomResourceDefinitions.
const GroupName = "apiextensions.k8s.io"

// FinalizerCleanup is the finalizer a CustomResourceDefinition gets when its deletion
// starts. It holds the definition back until all its custom resources are deleted.
const FinalizerCleanup = "customresourcecleanup.apiextensions.k8s.io"

// KnownVersions are every version Kubernetes has had of CustomResourceDefinitions,
// newest first. Concord serves and stores v1 only; v1beta1 was served until 1.21, and
// kube-apiserver still stores definitions in it, so a cluster's StorageState may name it.
var KnownVersions = []string{"v1", "v1beta1"}

// GroupResource names the CustomResourceDefinition resource.
var GroupResource = runtimeschema.GroupResource{Group: GroupName, Resource: "customresourcedefinitions"}

// ErrUndecodable is reported (as a field error) when a CustomResourceDefinition object
// does not fit the apiextensions.k8s.io/v1 types, e.g. spec.versions is not a list.
var ErrUndecodable = errors.New("not a valid apiextensions.k8s.io/v1 CustomResourceDefinition")

// Resource returns the definition of apiextensions.k8s.io/v1 customresourcedefinitions:
// cluster-scoped, short names crd and crds, category api-extensions, with a status
// subresource and no schema. Its Hooks give definitions Kubernetes' behaviour:
//
//   - as it is decoded, and on every write, the v1 defaults (singular, list kind,
//     conversion strategy None, service port 443) and a normal form: fields the v1
//     types do not have are dropped;
//   - on create, the status is reset to storedVersions = [the storage version];
//   - the deletion adds the finalizer customresourcecleanup.apiextensions.k8s.io, which
//     holds the definition until its custom resources are deleted;
//   - on an update that changes the storage version, the new one is appended to
//     status.storedVersions; no other write adds to it, and the main resource cannot
//     change the status at all, so only a status update may remove entries (never the
//     current storage version);
//   - validation by k8s.io/apiextensions-apiserver's own CRD validation (its messages
//     and field paths), with the x-kubernetes-validations rules compiled in the CEL
//     environments of the compatibility version (WithCELCompatibilityVersion), plus
//     the check that every version's schema compiles the way the registry will serve
//     it, so that an accepted definition can always be served.
//
// Every call returns a new Resource, ready for registry.Registry.Put.
func Resource(opts ...Option) *registry.Resource {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	rules := newCELRules(o.celVersion)
	return &registry.Resource{
		Group: GroupName,
		Names: apiextensionsv1.CustomResourceDefinitionNames{
			Plural:     GroupResource.Resource,
			Singular:   "customresourcedefinition",
			Kind:       "CustomResourceDefinition",
			ListKind:   "CustomResourceDefinitionList",
			ShortNames: []string{"crd", "crds"},
			Categories: []string{"api-extensions"},
		},
		Versions: []registry.Version{{
			Name:         "v1",
			Served:       true,
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			// kubectl get crd shows when a definition was created, not its age.
			PrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{{
				Name: "Created At", Type: "string", Format: "date", JSONPath: ".metadata.creationTimestamp",
				Description: "The time the definition was created.",
			}},
		}},
		StorageVersion: "v1",
		TypeConverter:  typeConverter,
		GoDefinitions:  goDefinitions,
		Hooks: &registry.Hooks{
			Default:          defaults,
			PrepareForCreate: prepareForCreate,
			PrepareForUpdate: prepareForUpdate,
			Validate:         rules.validateCreate,
			ValidateUpdate:   rules.validateUpdate,
			// As in kube's apiextensions-apiserver, the first deletion adds it, and
			// the Terminating condition.
			DeletionFinalizers: []string{FinalizerCleanup},
			PrepareForDelete:   prepareForDelete,
		},
	}
}

// Option changes the Resource.
type Option func(*options)

type options struct {
	celVersion *version.Version
}

// WithCELCompatibilityVersion sets the compatibility version whose CEL environment new
// x-kubernetes-validations rules compile in: the server's minimum compatibility version
// (KEP-4330). A new or changed rule that needs a newer library is refused; rules the
// stored definition already has, and the evaluation of custom resources, may use every
// library the binary has. Without it (or with nil), the version is the CEL library's
// default.
func WithCELCompatibilityVersion(v *version.Version) Option {
	return func(o *options) { o.celVersion = v }
}

// FromUnstructured decodes a CustomResourceDefinition held as unstructured JSON into
// the typed form. An error wraps ErrUndecodable.
func FromUnstructured(u *unstructured.Unstructured) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	return crd, nil
}

// writeSpecAndStatus replaces the spec and status of obj with those of crd. Metadata
// stays as the store keeps it.
// The spec and status are written as JSON decodes them (whole numbers as int64, as
// the store reads them back), so that an unchanged spec compares equal.
func writeSpecAndStatus(obj *unstructured.Unstructured, crd *apiextensionsv1.CustomResourceDefinition) {
	data, err := json.Marshal(crd)
	if err != nil {
		// The typed value was just decoded from JSON: it always encodes.
		panic(fmt.Sprintf("encoding a CustomResourceDefinition: %v", err))
	}
	var out map[string]any
	if err := utiljson.Unmarshal(data, &out); err != nil {
		panic(fmt.Sprintf("decoding an encoded CustomResourceDefinition: %v", err))
	}
	obj.Object["spec"] = out["spec"]
	obj.Object["status"] = out["status"]
}

// storageVersion returns the name of the version marked storage, or "".
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	v, _ := apihelpers.GetCRDStorageVersion(crd)
	return v
}

// defaults applies the v1 defaults as kube-apiserver decodes a definition, in a
// normal form (fields the v1 types do not have are dropped).
func defaults(_ string, obj *unstructured.Unstructured) {
	crd, err := FromUnstructured(obj)
	if err != nil {
		return // validation reports it
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	writeSpecAndStatus(obj, crd)
}

// prepareForDelete sets the Terminating condition of a definition whose deletion
// starts, in the deletion's write, as kube's apiextensions-apiserver does.
func prepareForDelete(_ context.Context, obj *unstructured.Unstructured) {
	crd, err := FromUnstructured(obj)
	if err != nil {
		return
	}
	apihelpers.SetCRDCondition(crd, terminatingCondition(reasonDeletionPending, messageDeletionPending))
	writeSpecAndStatus(obj, crd)
}

func prepareForCreate(_ context.Context, obj *unstructured.Unstructured) {
	crd, err := FromUnstructured(obj)
	if err != nil {
		return // validateCreate reports it
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	if v := storageVersion(crd); v != "" {
		crd.Status.StoredVersions = []string{v}
	}
	writeSpecAndStatus(obj, crd)
}

func prepareForUpdate(_ context.Context, obj, old *unstructured.Unstructured) {
	crd, err := FromUnstructured(obj)
	if err != nil {
		return // validateUpdate reports it
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	// The storage version is recorded when it changes. A status update cannot change
	// it (the spec is the stored one), so it alone may shrink the list.
	if oldCRD, err := FromUnstructured(old); err == nil {
		if v := storageVersion(crd); v != "" && v != storageVersion(oldCRD) && !apihelpers.IsStoredVersion(crd, v) {
			crd.Status.StoredVersions = append(crd.Status.StoredVersions, v)
		}
	}
	writeSpecAndStatus(obj, crd)
}

// toInternal converts a v1 definition to the internal type the validation works on.
func toInternal(crd *apiextensionsv1.CustomResourceDefinition) (*apiextensions.CustomResourceDefinition, error) {
	out := &apiextensions.CustomResourceDefinition{}
	// The conversion shares memory with its input: convert a copy.
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd.DeepCopy(), out, nil); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUndecodable, err)
	}
	return out, nil
}

func (c celRules) validateCreate(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList {
	crd, internal, errs := decodeForValidation(obj)
	if errs != nil {
		return errs
	}
	// The name's rule first: kube checks it with the object's metadata.
	errs = append(validateName(crd), c.check(internal, nil, specErrors(crdvalidation.ValidateCustomResourceDefinition(ctx, internal)))...)
	if len(errs) == 0 {
		errs = compileErrors(ctx, crd)
	}
	return errs
}

func (c celRules) validateUpdate(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
	crd, internal, errs := decodeForValidation(obj)
	if errs != nil {
		return errs
	}
	oldCRD, oldInternal, errs := decodeForValidation(old)
	if errs != nil {
		return errs
	}
	errs = specErrors(crdvalidation.ValidateCustomResourceDefinitionUpdate(ctx, internal, oldInternal))
	if apiequality.Semantic.DeepEqual(crd.Spec, oldCRD.Spec) {
		// Every rule is a stored one: the library compiled them all with every library.
		return errs
	}
	if errs = c.check(internal, oldInternal, errs); len(errs) == 0 {
		errs = compileErrors(ctx, crd)
	}
	return errs
}

func decodeForValidation(obj *unstructured.Unstructured) (*apiextensionsv1.CustomResourceDefinition, *apiextensions.CustomResourceDefinition, field.ErrorList) {
	crd, err := FromUnstructured(obj)
	if err != nil {
		return nil, nil, field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())}
	}
	internal, err := toInternal(crd)
	if err != nil {
		return nil, nil, field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())}
	}
	return crd, internal, nil
}

// specErrors drops the errors about metadata: the registry validates ObjectMeta itself,
// and would otherwise report them twice.
func specErrors(errs field.ErrorList) field.ErrorList {
	out := errs[:0:0]
	for _, e := range errs {
		if e.Field != "metadata" && !strings.HasPrefix(e.Field, "metadata.") {
			out = append(out, e)
		}
	}
	return out
}

// validateName checks the one rule on a definition's name beyond ObjectMeta's: it is
// <plural>.<group>, so that two definitions cannot serve the same resource.
func validateName(crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	if want := crd.Spec.Names.Plural + "." + crd.Spec.Group; crd.Name != want {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), crd.Name, `must be spec.names.plural+"."+spec.group`)}
	}
	return nil
}

// compileErrors builds the registry definition of crd and compiles its schemas, so
// that a definition is refused, not accepted and then left unserved, when Concord
// cannot serve a schema the CRD validation let through.
func compileErrors(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	res, err := definition(crd, crd.Spec.Names)
	if err == nil {
		err = res.Prepare(ctx)
	}
	if err == nil {
		return nil
	}
	var invalid *schema.InvalidSchemaError
	if errors.As(err, &invalid) {
		return invalid.Errors
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "versions"), nil, err.Error())}
}
