package apiextensions

import (
	"context"
	"errors"
	"fmt"

	"github.com/concordproject/concord/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Definition returns the registry.Resource that serves the custom resources crd
// defines, under its accepted names (status.acceptedNames; the caller checks that the
// definition is Established): every version with its schema, subresources, printer
// columns, selectable fields and deprecation; the storage version; the converter of
// spec.conversion (None, or the conversion webhook); Owner set to crd. The Resource is
// not prepared: Registry.Put compiles its schemas.
//
// An error means the definition cannot be served as it is (no storage version, say);
// validation refuses such definitions, so it is only seen for objects stored by
// something else.
func Definition(crd *apiextensionsv1.CustomResourceDefinition) (*registry.Resource, error) {
	return definition(crd, crd.Status.AcceptedNames)
}

// definition is Definition under the given names: the accepted ones when serving, the
// requested ones when validating a definition before it is stored.
func definition(crd *apiextensionsv1.CustomResourceDefinition, names apiextensionsv1.CustomResourceDefinitionNames) (*registry.Resource, error) {
	crd = crd.DeepCopy() // the Resource owns what it points to
	res := &registry.Resource{
		Group:      crd.Spec.Group,
		Names:      names,
		Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped,
		Owner: &registry.OwnerRef{
			APIVersion: apiextensionsv1.SchemeGroupVersion.String(),
			Kind:       "CustomResourceDefinition",
			Name:       crd.Name,
			UID:        string(crd.UID),
		},
	}
	// The plural is the definition's identity (its name is <plural>.<group>); it never
	// depends on name acceptance.
	res.Names.Plural = crd.Spec.Names.Plural
	if res.Names.ListKind == "" && res.Names.Kind != "" {
		res.Names.ListKind = res.Names.Kind + "List"
	}
	for _, v := range crd.Spec.Versions {
		rv := registry.Version{
			Name:               v.Name,
			Served:             v.Served,
			Deprecated:         v.Deprecated,
			DeprecationWarning: v.DeprecationWarning,
			Subresources:       v.Subresources,
			PrinterColumns:     v.AdditionalPrinterColumns,
			SelectableFields:   v.SelectableFields,
		}
		if v.Schema != nil {
			rv.Schema = v.Schema.OpenAPIV3Schema
		}
		res.Versions = append(res.Versions, rv)
		if v.Storage {
			res.StorageVersion = v.Name
		}
	}
	if res.StorageVersion == "" {
		return nil, fmt.Errorf("%s: no version is marked storage", crd.Name)
	}
	if c := crd.Spec.Conversion; c != nil && c.Strategy == apiextensionsv1.WebhookConverter {
		res.Converter = newWebhookConverter(crd)
	} else {
		res.Converter = registry.NoneConverter{Group: crd.Spec.Group}
	}
	return res, nil
}

// errTerminating is the answer to a create of a custom resource whose definition is
// being deleted.
var errTerminating = errors.New("create not allowed while custom resource definition is terminating")

// terminatingHooks are the hooks of the custom resources of a definition being
// deleted: everything but creation goes on (the cleanup deletes them, their own
// finalizers still run).
func terminatingHooks(gr schema.GroupResource) *registry.Hooks {
	return &registry.Hooks{
		AdmitCreate: func(context.Context, *unstructured.Unstructured) error {
			err := apierrors.NewMethodNotSupported(gr, "create")
			err.ErrStatus.Message = errTerminating.Error()
			return err
		},
	}
}
