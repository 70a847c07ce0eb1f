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

// webhookDefaults are those of admission webhooks (ValidatingWebhook, MutatingWebhook
// and the ServiceReference of their clientConfig) in v1; webhookDefaultsV1beta1 those
// of v1beta1, which differ (no longer served since 1.22).
var (
	webhookDefaults = map[string]any{
		"FailurePolicy":      "Fail",
		"MatchPolicy":        "Equivalent",
		"NamespaceSelector":  map[string]any{},
		"ObjectSelector":     map[string]any{},
		"TimeoutSeconds":     10,
		"ReinvocationPolicy": "Never", // MutatingWebhook only
	}
	webhookDefaultsV1beta1 = map[string]any{
		"FailurePolicy":           "Ignore",
		"MatchPolicy":             "Exact",
		"NamespaceSelector":       map[string]any{},
		"ObjectSelector":          map[string]any{},
		"SideEffects":             "Unknown",
		"TimeoutSeconds":          30,
		"AdmissionReviewVersions": []any{"v1beta1"},
		"ReinvocationPolicy":      "Never", // MutatingWebhook only
	}
)

func init() {
	for _, v := range []string{"v1", "v1beta1"} {
		fieldDefaults["scheduling/"+v+".PriorityClass.PreemptionPolicy"] = "PreemptLowerPriority"
	}
	for _, v := range []string{"v1", "v1beta1", "v1alpha1"} {
		for field, d := range admissionPolicyDefaults {
			fieldDefaults["admissionregistration/"+v+"."+field] = d
		}
	}
	for v, defaults := range map[string]map[string]any{"v1": webhookDefaults, "v1beta1": webhookDefaultsV1beta1} {
		for field, d := range defaults {
			if field != "ReinvocationPolicy" {
				fieldDefaults["admissionregistration/"+v+".ValidatingWebhook."+field] = d
			}
			fieldDefaults["admissionregistration/"+v+".MutatingWebhook."+field] = d
		}
		fieldDefaults["admissionregistration/"+v+".ServiceReference.Port"] = 443
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
