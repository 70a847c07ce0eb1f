package api

import (
	"slices"
	"testing"

	"github.com/concordproject/concord/catalog"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/api/equality"
)

// Both manifests are definitions Kubernetes accepts: structural schemas, a status
// subresource, approval annotations for their protected groups.
func TestManifestsAreValid(t *testing.T) {
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{StorageStateCRD(), StorageVersionMigrationCRD()} {
		t.Run(crd.Name, func(t *testing.T) {
			v1 := crd.DeepCopy()
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(v1)
			internal := &apiextensions.CustomResourceDefinition{}
			if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1, internal, nil); err != nil {
				t.Fatal(err)
			}
			if errs := crdvalidation.ValidateCustomResourceDefinition(t.Context(), internal); len(errs) > 0 {
				t.Fatalf("invalid definition: %v", errs.ToAggregate())
			}
			if crd.Annotations["api-approved.kubernetes.io"] == "" {
				t.Error("no api-approved.kubernetes.io annotation: Kubernetes would flag the definition")
			}
			for _, v := range crd.Spec.Versions {
				if v.Subresources == nil || v.Subresources.Status == nil {
					t.Errorf("version %s has no status subresource", v.Name)
				}
			}
			if _, err := Raw(StorageStatesFile); err != nil {
				t.Error(err)
			}
		})
	}
}

// The StorageVersionMigration definition is the built-in API's schema (as the API
// catalog has it from k8s.io/api) plus status.progress, and the required fields a
// definition must declare for the keys of a list-map (metav1.Condition's): clusters
// that install it and clusters that serve the built-in agree on every field they
// share.
func TestStorageVersionMigrationMatchesTheBuiltIn(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	builtin := cat.Resource("storagemigration.k8s.io", "storageversionmigrations")
	if builtin == nil || builtin.Version("v1") == nil {
		t.Fatal("the API catalog has no storagemigration.k8s.io/v1 storageversionmigrations")
	}
	crd := StorageVersionMigrationCRD()
	if crd.Spec.Names.Kind != builtin.Names.Kind || crd.Spec.Names.Plural != builtin.Names.Plural ||
		(crd.Spec.Scope == apiextensionsv1.NamespaceScoped) != builtin.Namespaced {
		t.Errorf("names or scope differ from the built-in: %+v", crd.Spec.Names)
	}
	if got := []string{crd.Spec.Versions[0].Name}; !slices.Equal(got, []string{"v1"}) {
		t.Errorf("versions %v, want [v1]", got)
	}
	ours := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.DeepCopy()
	delete(ours.Properties["status"].Properties, "progress")
	stripDescriptions(ours)
	theirs := builtin.Version("v1").Schema.DeepCopy()
	stripDescriptions(theirs)
	if !equality.Semantic.DeepEqual(ours, theirs) {
		t.Errorf("schema without progress differs from the built-in's:\nours   %+v\ntheirs %+v", ours, theirs)
	}
}

func stripDescriptions(s *apiextensionsv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	s.Description = ""
	s.Required = nil
	for k, p := range s.Properties {
		stripDescriptions(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		stripDescriptions(s.Items.Schema)
	}
}

// Every rule of the StorageState schema reports its error on a field: a rule at the
// root without a fieldPath is reported at no path at all ("<nil>").
func TestStorageStateRulesNameTheirField(t *testing.T) {
	root := StorageStateCRD().Spec.Versions[0].Schema.OpenAPIV3Schema
	if len(root.XValidations) == 0 {
		t.Fatal("no rule at the root: the name rule is gone")
	}
	for _, r := range root.XValidations {
		if r.FieldPath != ".metadata.name" {
			t.Errorf("root rule %q reports at %q, want .metadata.name", r.Rule, r.FieldPath)
		}
	}
	if _, ok := root.Properties["metadata"].Properties["name"]; !ok {
		t.Error("metadata.name is not in the schema: a fieldPath cannot name it")
	}
	conds := root.Properties["status"].Properties["conditions"]
	if conds.XListType == nil || *conds.XListType != "map" || len(conds.XListMapKeys) != 1 || conds.XListMapKeys[0] != "type" {
		t.Errorf("status.conditions is not a list-map keyed by type: %+v", conds)
	}
}
