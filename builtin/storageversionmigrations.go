package builtin

import (
	"context"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var storageVersionMigrationsGR = migrationapi.StorageVersionMigrations.GroupResource()

// configureStorageVersionMigrations adds Concord's status.progress (and printer columns
// showing it) to every version of res, the built-in storagemigration.k8s.io
// storageversionmigrations resource whose schemas come from the API catalog, so that
// the server keeps the progress the controllers write instead of pruning it. The
// fields are those of the StorageVersionMigration manifest of migration/api, the one
// definition of them.
//
// It also gives res Kubernetes' validation of the API, which the catalog's schemas do
// not carry: on create, spec.resource.resource is required (a DNS-1035 label) and
// spec.resource.group a DNS-1123 subdomain; on update, spec is immutable; a status
// write keeps status.resourceVersion once set (and well formed), keeps a True
// Succeeded or Failed condition True, never has both True, and never has Running
// True beside either. Violations are 422 Invalid with one cause per rule, the field
// paths and messages of Kubernetes. The rules run after any Validate and
// ValidateUpdate hooks res already has, which are kept (res.Hooks is replaced by a
// copy, never changed in place).
func configureStorageVersionMigrations(res *registry.Resource) error {
	res.Hooks = withMigrationValidation(res.Hooks)
	v := migrationapi.StorageVersionMigrationCRD().Spec.Versions[0]
	progress := v.Schema.OpenAPIV3Schema.Properties["status"].Properties["progress"]
	done := map[*apiextensionsv1.JSONSchemaProps]bool{}
	for i := range res.Versions {
		rv := &res.Versions[i]
		if rv.Schema == nil {
			continue // schemaless: nothing is pruned
		}
		if !done[rv.Schema] {
			done[rv.Schema] = true
			status, ok := rv.Schema.Properties["status"]
			if !ok {
				status = apiextensionsv1.JSONSchemaProps{Type: "object"}
			}
			if status.Properties == nil {
				status.Properties = map[string]apiextensionsv1.JSONSchemaProps{}
			}
			status.Properties["progress"] = *progress.DeepCopy()
			rv.Schema.Properties["status"] = status
		}
		if len(rv.PrinterColumns) == 0 {
			for _, c := range v.AdditionalPrinterColumns {
				rv.PrinterColumns = append(rv.PrinterColumns, *c.DeepCopy())
			}
		}
	}
	return nil
}

// withMigrationValidation returns a copy of base (nil: no hooks) whose Validate and
// ValidateUpdate also run the StorageVersionMigration rules, after base's own. base
// is not changed: a Hooks value may be shared.
func withMigrationValidation(base *registry.Hooks) *registry.Hooks {
	h := &registry.Hooks{}
	if base != nil {
		*h = *base
	}
	validate, validateUpdate := h.Validate, h.ValidateUpdate
	h.Validate = func(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList {
		var errs field.ErrorList
		if validate != nil {
			errs = validate(ctx, obj)
		}
		return append(errs, migrationapi.ValidateMigration(obj.Object)...)
	}
	h.ValidateUpdate = func(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
		var errs field.ErrorList
		if validateUpdate != nil {
			errs = validateUpdate(ctx, obj, old)
		}
		return append(errs, migrationapi.ValidateMigrationUpdate(obj.Object, old.Object)...)
	}
	return h
}
