package kubesemantics

import (
	"context"
	"reflect"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiserverfeatures "k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	admissionvalidation "k8s.io/kubernetes/pkg/apis/admissionregistration/validation"
	"k8s.io/kubernetes/pkg/kubeapiserver/admission/exclusion"

	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install" // admissionregistration's types, defaults and conversions
)

func init() { groups = append(groups, admissionregistrationKinds) }

// admissionregistrationKinds are the strategies of group admissionregistration.k8s.io.
// Their CEL expressions compile at the server's minimum compatibility version
// (celCheck). (kube's strategies of policies and bindings also check that a user who
// names a paramKind or paramRef may read it: these do not.)
func admissionregistrationKinds() map[schema.GroupResource]strategy {
	const group = "admissionregistration.k8s.io"
	return map[schema.GroupResource]strategy{
		{Group: group, Resource: "validatingwebhookconfigurations"}:   validatingWebhooksKind.erase(),
		{Group: group, Resource: "mutatingwebhookconfigurations"}:     mutatingWebhooksKind.erase(),
		{Group: group, Resource: "validatingadmissionpolicies"}:       validatingPolicyKind.erase(),
		{Group: group, Resource: "validatingadmissionpolicybindings"}: validatingBindingKind.erase(),
		{Group: group, Resource: "mutatingadmissionpolicies"}:         mutatingPolicyKind.erase(),
		{Group: group, Resource: "mutatingadmissionpolicybindings"}:   mutatingBindingKind.erase(),
	}
}

var validatingWebhooksKind = kind[*admissionregistration.ValidatingWebhookConfiguration]{
	prepareCreate: func(_ context.Context, c *admissionregistration.ValidatingWebhookConfiguration) { c.Generation = 1 },
	validate: func(_ context.Context, c *admissionregistration.ValidatingWebhookConfiguration) field.ErrorList {
		errs := append(admissionvalidation.ValidateValidatingWebhookConfiguration(c), staticSuffixErrors(c.Name)...)
		return celCheck(errs, webhookExprs(validatingWebhookConditions(c), nil))
	},
	warnCreate: func(_ context.Context, c *admissionregistration.ValidatingWebhookConfiguration) []string {
		return append(staticSuffixCreateWarnings(c.Name), virtualResourceWarnings(c.Webhooks, admissionvalidation.WarningsForValidatingWebhookRules)...)
	},
	prepareUpdate: func(_ context.Context, c, old *admissionregistration.ValidatingWebhookConfiguration) {
		c.Generation = nextGeneration(old.Generation, reflect.DeepEqual(c.Webhooks, old.Webhooks))
	},
	validateUpdate: func(_ context.Context, c, old *admissionregistration.ValidatingWebhookConfiguration) field.ErrorList {
		errs := admissionvalidation.ValidateValidatingWebhookConfigurationUpdate(c, old)
		return celCheck(errs, webhookExprs(validatingWebhookConditions(c), validatingWebhookConditions(old)))
	},
	warnUpdate: func(_ context.Context, c, _ *admissionregistration.ValidatingWebhookConfiguration) []string {
		return append(admissionvalidation.WarningsForStaticSuffix(c.Name), virtualResourceWarnings(c.Webhooks, admissionvalidation.WarningsForValidatingWebhookRules)...)
	},
}

var mutatingWebhooksKind = kind[*admissionregistration.MutatingWebhookConfiguration]{
	prepareCreate: func(_ context.Context, c *admissionregistration.MutatingWebhookConfiguration) { c.Generation = 1 },
	validate: func(_ context.Context, c *admissionregistration.MutatingWebhookConfiguration) field.ErrorList {
		errs := append(admissionvalidation.ValidateMutatingWebhookConfiguration(c), staticSuffixErrors(c.Name)...)
		return celCheck(errs, webhookExprs(mutatingWebhookConditions(c), nil))
	},
	warnCreate: func(_ context.Context, c *admissionregistration.MutatingWebhookConfiguration) []string {
		return append(staticSuffixCreateWarnings(c.Name), virtualResourceWarnings(c.Webhooks, admissionvalidation.WarningsForMutatingWebhookRules)...)
	},
	prepareUpdate: func(_ context.Context, c, old *admissionregistration.MutatingWebhookConfiguration) {
		c.Generation = nextGeneration(old.Generation, reflect.DeepEqual(c.Webhooks, old.Webhooks))
	},
	validateUpdate: func(_ context.Context, c, old *admissionregistration.MutatingWebhookConfiguration) field.ErrorList {
		errs := admissionvalidation.ValidateMutatingWebhookConfigurationUpdate(c, old)
		return celCheck(errs, webhookExprs(mutatingWebhookConditions(c), mutatingWebhookConditions(old)))
	},
	warnUpdate: func(_ context.Context, c, _ *admissionregistration.MutatingWebhookConfiguration) []string {
		return append(admissionvalidation.WarningsForStaticSuffix(c.Name), virtualResourceWarnings(c.Webhooks, admissionvalidation.WarningsForMutatingWebhookRules)...)
	},
}

var validatingPolicyKind = kind[*admissionregistration.ValidatingAdmissionPolicy]{
	prepareCreate: func(_ context.Context, p *admissionregistration.ValidatingAdmissionPolicy) {
		p.Status, p.Generation = admissionregistration.ValidatingAdmissionPolicyStatus{}, 1
	},
	validate: func(_ context.Context, p *admissionregistration.ValidatingAdmissionPolicy) field.ErrorList {
		errs := append(admissionvalidation.ValidateValidatingAdmissionPolicy(p), staticSuffixErrors(p.Name)...)
		return celCheck(errs, validatingPolicyExprs(p, nil))
	},
	warnCreate: func(_ context.Context, p *admissionregistration.ValidatingAdmissionPolicy) []string {
		return staticSuffixCreateWarnings(p.Name)
	},
	prepareUpdate: func(_ context.Context, p, old *admissionregistration.ValidatingAdmissionPolicy) {
		p.Status = old.Status
		p.Generation = nextGeneration(old.Generation, apiequality.Semantic.DeepEqual(p.Spec, old.Spec))
	},
	validateUpdate: func(_ context.Context, p, old *admissionregistration.ValidatingAdmissionPolicy) field.ErrorList {
		return celCheck(admissionvalidation.ValidateValidatingAdmissionPolicyUpdate(p, old), validatingPolicyExprs(p, old))
	},
	warnUpdate: func(_ context.Context, p, _ *admissionregistration.ValidatingAdmissionPolicy) []string {
		return admissionvalidation.WarningsForStaticSuffix(p.Name)
	},
	prepareStatus: func(_ context.Context, p, old *admissionregistration.ValidatingAdmissionPolicy) {
		p.Spec = old.Spec
		resetMetaKeeping(&p.ObjectMeta, &old.ObjectMeta)
	},
	validateStatus: func(_ context.Context, p, old *admissionregistration.ValidatingAdmissionPolicy) field.ErrorList {
		return admissionvalidation.ValidateValidatingAdmissionPolicyStatusUpdate(p, old)
	},
}

var validatingBindingKind = kind[*admissionregistration.ValidatingAdmissionPolicyBinding]{
	prepareCreate: func(_ context.Context, b *admissionregistration.ValidatingAdmissionPolicyBinding) { b.Generation = 1 },
	validate: func(_ context.Context, b *admissionregistration.ValidatingAdmissionPolicyBinding) field.ErrorList {
		return append(admissionvalidation.ValidateValidatingAdmissionPolicyBinding(b), staticSuffixErrors(b.Name)...)
	},
	warnCreate: func(_ context.Context, b *admissionregistration.ValidatingAdmissionPolicyBinding) []string {
		return staticSuffixCreateWarnings(b.Name)
	},
	prepareUpdate: func(_ context.Context, b, old *admissionregistration.ValidatingAdmissionPolicyBinding) {
		b.Generation = nextGeneration(old.Generation, apiequality.Semantic.DeepEqual(b.Spec, old.Spec))
	},
	validateUpdate: func(_ context.Context, b, old *admissionregistration.ValidatingAdmissionPolicyBinding) field.ErrorList {
		return admissionvalidation.ValidateValidatingAdmissionPolicyBindingUpdate(b, old)
	},
	warnUpdate: func(_ context.Context, b, _ *admissionregistration.ValidatingAdmissionPolicyBinding) []string {
		return admissionvalidation.WarningsForStaticSuffix(b.Name)
	},
}

var mutatingPolicyKind = kind[*admissionregistration.MutatingAdmissionPolicy]{
	prepareCreate: func(_ context.Context, p *admissionregistration.MutatingAdmissionPolicy) { p.Generation = 1 },
	validate: func(_ context.Context, p *admissionregistration.MutatingAdmissionPolicy) field.ErrorList {
		errs := append(admissionvalidation.ValidateMutatingAdmissionPolicy(p), staticSuffixErrors(p.Name)...)
		return celCheck(errs, mutatingPolicyExprs(p, nil))
	},
	warnCreate: func(_ context.Context, p *admissionregistration.MutatingAdmissionPolicy) []string {
		return staticSuffixCreateWarnings(p.Name)
	},
	prepareUpdate: func(_ context.Context, p, old *admissionregistration.MutatingAdmissionPolicy) {
		p.Generation = nextGeneration(old.Generation, apiequality.Semantic.DeepEqual(p.Spec, old.Spec))
	},
	validateUpdate: func(_ context.Context, p, old *admissionregistration.MutatingAdmissionPolicy) field.ErrorList {
		return celCheck(admissionvalidation.ValidateMutatingAdmissionPolicyUpdate(p, old), mutatingPolicyExprs(p, old))
	},
	warnUpdate: func(_ context.Context, p, _ *admissionregistration.MutatingAdmissionPolicy) []string {
		return admissionvalidation.WarningsForStaticSuffix(p.Name)
	},
}

var mutatingBindingKind = kind[*admissionregistration.MutatingAdmissionPolicyBinding]{
	prepareCreate: func(_ context.Context, b *admissionregistration.MutatingAdmissionPolicyBinding) { b.Generation = 1 },
	validate: func(_ context.Context, b *admissionregistration.MutatingAdmissionPolicyBinding) field.ErrorList {
		return append(admissionvalidation.ValidateMutatingAdmissionPolicyBinding(b), staticSuffixErrors(b.Name)...)
	},
	warnCreate: func(_ context.Context, b *admissionregistration.MutatingAdmissionPolicyBinding) []string {
		return staticSuffixCreateWarnings(b.Name)
	},
	prepareUpdate: func(_ context.Context, b, old *admissionregistration.MutatingAdmissionPolicyBinding) {
		b.Generation = nextGeneration(old.Generation, apiequality.Semantic.DeepEqual(b.Spec, old.Spec))
	},
	validateUpdate: func(_ context.Context, b, old *admissionregistration.MutatingAdmissionPolicyBinding) field.ErrorList {
		return admissionvalidation.ValidateMutatingAdmissionPolicyBindingUpdate(b, old)
	},
	warnUpdate: func(_ context.Context, b, _ *admissionregistration.MutatingAdmissionPolicyBinding) []string {
		return admissionvalidation.WarningsForStaticSuffix(b.Name)
	},
}

// manifestConfigs reports whether admission configurations may come from manifests
// on the servers' disks: the names of those (a reserved suffix) are then refused
// through the API, and only warned of while it is off.
func manifestConfigs() bool {
	return utilfeature.DefaultFeatureGate.Enabled(apiserverfeatures.ManifestBasedAdmissionControlConfig)
}

// staticSuffixErrors refuses a name with the suffix of manifests' configurations
// while they are enabled.
func staticSuffixErrors(name string) field.ErrorList {
	if !manifestConfigs() {
		return nil
	}
	return admissionvalidation.ValidateStaticSuffix(name, field.NewPath("metadata", "name"))
}

// staticSuffixCreateWarnings warns of a new name with that suffix while manifests'
// configurations are disabled.
func staticSuffixCreateWarnings(name string) []string {
	if manifestConfigs() {
		return nil
	}
	return admissionvalidation.WarningsForStaticSuffix(name)
}

// virtualResourceWarnings warns of webhooks' rules that name resources webhooks are
// never called for (reviews and other resources that are not stored), while kube
// excludes them.
func virtualResourceWarnings[W any](webhooks []W, warnings func([]W, []schema.GroupResource) []string) []string {
	if !utilfeature.DefaultFeatureGate.Enabled(apiserverfeatures.ExcludeAdmissionWebhookVirtualResources) {
		return nil
	}
	return warnings(webhooks, exclusion.Excluded())
}
