package admission

import (
	"context"

	"github.com/concordproject/concord/registry"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
)

// The admissionregistration.k8s.io resources whose behaviour this package gives.
var (
	ValidatingWebhookConfigurationsGR = schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "validatingwebhookconfigurations"}
	MutatingWebhookConfigurationsGR   = schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "mutatingwebhookconfigurations"}
	ValidatingPoliciesGR              = schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "validatingadmissionpolicies"}
	ValidatingPolicyBindingsGR        = schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "validatingadmissionpolicybindings"}
	MutatingPoliciesGR                = schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "mutatingadmissionpolicies"}
	MutatingPolicyBindingsGR          = schema.GroupResource{Group: admissionregistrationv1.GroupName, Resource: "mutatingadmissionpolicybindings"}
)

// Configurers returns what gives each admission configuration resource its behaviour:
// Kubernetes' validation of webhook configurations, policies and bindings, with their
// CEL expressions compiled in the environments of minimum compatibility version
// celVersion (nil: the CEL library's default), and kubectl's WEBHOOKS column. Every
// version of a resource is read as v1, whose fields its other versions share.
func Configurers(celVersion *version.Version) map[schema.GroupResource]func(*registry.Resource) error {
	c := newCELEnvironments(celVersion)
	return map[schema.GroupResource]func(*registry.Resource) error{
		ValidatingWebhookConfigurationsGR: configureWith(webhookTable, func(obj, old *admissionregistrationv1.ValidatingWebhookConfiguration) field.ErrorList {
			return c.validateWebhooks(validatingHooks(obj), newWebhookOptions(validatingHooks(old), validatingHooks(obj)))
		}),
		MutatingWebhookConfigurationsGR: configureWith(webhookTable, func(obj, old *admissionregistrationv1.MutatingWebhookConfiguration) field.ErrorList {
			return c.validateWebhooks(mutatingHooks(obj), newWebhookOptions(mutatingHooks(old), mutatingHooks(obj)))
		}),
		ValidatingPoliciesGR: configureWith(nil, func(obj, old *admissionregistrationv1.ValidatingAdmissionPolicy) field.ErrorList {
			return c.validateValidatingPolicy(obj, validatingPolicyOptions(obj, old))
		}),
		MutatingPoliciesGR: configureWith(nil, func(obj, old *admissionregistrationv1.MutatingAdmissionPolicy) field.ErrorList {
			return c.validateMutatingPolicy(obj, mutatingPolicyOptions(obj, old))
		}),
		ValidatingPolicyBindingsGR: configureWith(nil, func(obj, _ *admissionregistrationv1.ValidatingAdmissionPolicyBinding) field.ErrorList {
			return validateBinding(obj.Spec.PolicyName, obj.Spec.ParamRef, obj.Spec.MatchResources, obj.Spec.ValidationActions, false)
		}),
		MutatingPolicyBindingsGR: configureWith(nil, func(obj, _ *admissionregistrationv1.MutatingAdmissionPolicyBinding) field.ErrorList {
			return validateBinding(obj.Spec.PolicyName, obj.Spec.ParamRef, obj.Spec.MatchResources, nil, true)
		}),
	}
}

// configureWith returns a configurer that validates creations and updates with
// validate (old is nil for a creation) and sets the table hook, if any.
func configureWith[T any](table func(*unstructured.Unstructured) []interface{}, validate func(obj, old *T) field.ErrorList) func(*registry.Resource) error {
	return func(res *registry.Resource) error {
		res.Hooks = &registry.Hooks{
			Validate: func(_ context.Context, obj *unstructured.Unstructured) field.ErrorList {
				typed, errs := typedAs[T](obj)
				if errs != nil {
					return errs
				}
				return validate(typed, nil)
			},
			ValidateUpdate: func(_ context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
				typed, errs := typedAs[T](obj)
				if errs != nil {
					return errs
				}
				was, errs := typedAs[T](old)
				if errs != nil {
					return errs
				}
				return validate(typed, was)
			},
		}
		if table != nil && res.HasPrinterColumns(webhookColumns) {
			res.Hooks.TableCells = table
		}
		return nil
	}
}

// typedAs reads obj as a T (a v1 type). An object that cannot be read so has fields
// of the wrong type, which its schema's validation reports too.
func typedAs[T any](obj *unstructured.Unstructured) (*T, field.ErrorList) {
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, out); err != nil {
		return nil, field.ErrorList{field.TypeInvalid(field.NewPath(obj.GetKind()), field.OmitValueType{}, "cannot be read: "+err.Error())}
	}
	return out, nil
}

func validatingHooks(c *admissionregistrationv1.ValidatingWebhookConfiguration) []webhookFields {
	if c == nil {
		return nil
	}
	out := make([]webhookFields, 0, len(c.Webhooks))
	for i := range c.Webhooks {
		out = append(out, validatingFields(&c.Webhooks[i]))
	}
	return out
}

func mutatingHooks(c *admissionregistrationv1.MutatingWebhookConfiguration) []webhookFields {
	if c == nil {
		return nil
	}
	out := make([]webhookFields, 0, len(c.Webhooks))
	for i := range c.Webhooks {
		out = append(out, mutatingFields(&c.Webhooks[i]))
	}
	return out
}

// webhookColumns are the catalog's printer columns of webhook configurations.
var webhookColumns = []string{"Webhooks", "Age"}

// webhookTable prints WEBHOOKS (how many) and AGE, as kubectl does.
func webhookTable(obj *unstructured.Unstructured) []interface{} {
	hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
	return []interface{}{int64(len(hooks)), metatable.ConvertToHumanReadableDateType(obj.GetCreationTimestamp())}
}
