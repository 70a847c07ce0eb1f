package main

import (
	"encoding/json"
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// fieldDefaults are the defaults Kubernetes' API server sets on decoding (its
// SetDefaults_* functions, which k8s.io/api does not carry), as schema defaults: the
// server applies them on every write and every read from storage, so objects stored
// without them read as Kubernetes would have stored them. Keys are
// "<package path below k8s.io/api/>.<Type>.<Field>"; a default applies wherever the
// type appears, once its parent object is present.
var fieldDefaults = map[string]any{}

// admissionPolicyDefaults are those of admission policies and their bindings
// (admissionregistration.k8s.io: MatchResources, ParamRef, Rule and the policy specs),
// the same in v1, v1beta1 and v1alpha1.
var admissionPolicyDefaults = map[string]any{
	"ValidatingAdmissionPolicySpec.FailurePolicy": "Fail",
	"MutatingAdmissionPolicySpec.FailurePolicy":   "Fail",
	"MatchResources.MatchPolicy":                  "Equivalent",
	"MatchResources.NamespaceSelector":            map[string]any{},
	"MatchResources.ObjectSelector":               map[string]any{},
	"ParamRef.ParameterNotFoundAction":            "Deny",
	"Rule.Scope":                                  "*",
}

func init() {
	for _, v := range []string{"v1", "v1beta1"} {
		fieldDefaults["scheduling/"+v+".PriorityClass.PreemptionPolicy"] = "PreemptLowerPriority"
	}
	for _, v := range []string{"v1", "v1beta1", "v1alpha1"} {
		for field, d := range admissionPolicyDefaults {
			fieldDefaults["admissionregistration/"+v+"."+field] = d
		}
	}
}

// fieldDefault returns the default of field f of struct t, if it has one.
func fieldDefault(t reflect.Type, f reflect.StructField) (*apiextensionsv1.JSON, error) {
	pkg, ok := strings.CutPrefix(t.PkgPath(), "k8s.io/api/")
	if !ok {
		return nil, nil
	}
	d, ok := fieldDefaults[pkg+"."+t.Name()+"."+f.Name]
	if !ok {
		return nil, nil
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return &apiextensionsv1.JSON{Raw: raw}, nil
}
