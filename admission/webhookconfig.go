package admission

import (
	"crypto/x509"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/utils/ptr"
)

// webhookFields is what ValidatingWebhook and MutatingWebhook share, as validation reads it.
type webhookFields struct {
	name                    string
	clientConfig            admissionregistrationv1.WebhookClientConfig
	rules                   []admissionregistrationv1.RuleWithOperations
	failurePolicy           *admissionregistrationv1.FailurePolicyType
	matchPolicy             *admissionregistrationv1.MatchPolicyType
	namespaceSelector       *metav1.LabelSelector
	objectSelector          *metav1.LabelSelector
	sideEffects             *admissionregistrationv1.SideEffectClass
	timeoutSeconds          *int32
	admissionReviewVersions []string
	matchConditions         []admissionregistrationv1.MatchCondition
	reinvocationPolicy      *admissionregistrationv1.ReinvocationPolicyType // mutating only
}

func validatingFields(w *admissionregistrationv1.ValidatingWebhook) webhookFields {
	return webhookFields{
		name: w.Name, clientConfig: w.ClientConfig, rules: w.Rules, failurePolicy: w.FailurePolicy, matchPolicy: w.MatchPolicy,
		namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector, sideEffects: w.SideEffects,
		timeoutSeconds: w.TimeoutSeconds, admissionReviewVersions: w.AdmissionReviewVersions, matchConditions: w.MatchConditions,
	}
}

func mutatingFields(w *admissionregistrationv1.MutatingWebhook) webhookFields {
	return webhookFields{
		name: w.Name, clientConfig: w.ClientConfig, rules: w.Rules, failurePolicy: w.FailurePolicy, matchPolicy: w.MatchPolicy,
		namespaceSelector: w.NamespaceSelector, objectSelector: w.ObjectSelector, sideEffects: w.SideEffects,
		timeoutSeconds: w.TimeoutSeconds, admissionReviewVersions: w.AdmissionReviewVersions, matchConditions: w.MatchConditions,
		reinvocationPolicy: w.ReinvocationPolicy,
	}
}

// webhookOptions are what an update may keep of the stored configuration that a
// creation may not have (Kubernetes' ratcheting of webhook configurations).
type webhookOptions struct {
	// keepMatchConditions: the match conditions are those stored; they are not
	// compiled again.
	keepMatchConditions bool
	// anySideEffects allows Some and Unknown (some stored webhook has them).
	anySideEffects bool
	// anyReviewVersions allows a webhook without a known AdmissionReview version.
	anyReviewVersions bool
	// duplicateNames allows webhooks of the same name (the stored ones had some).
	duplicateNames bool
	// looseSelectors allows label values that are invalid (the stored ones had some).
	looseSelectors bool
	// caBundles are the CA bundles stored: they are not parsed again.
	caBundles sets.Set[string]
	// stored are the match conditions stored, compiled as stored expressions.
	stored expressionSet
}

// newWebhookOptions returns the options of an update of old (nil: a creation).
func newWebhookOptions(old []webhookFields, now []webhookFields) webhookOptions {
	if old == nil {
		return webhookOptions{stored: expressionSet{}, caBundles: sets.New[string]()}
	}
	o := webhookOptions{stored: expressionSet{}, caBundles: sets.New[string](), keepMatchConditions: len(old) == len(now)}
	names := sets.New[string]()
	for i, w := range old {
		if w.sideEffects == nil || !supported(*w.sideEffects, noSideEffects) {
			o.anySideEffects = true
		}
		if len(w.admissionReviewVersions) > 0 && !slices.ContainsFunc(w.admissionReviewVersions, func(v string) bool { return slices.Contains(reviewVersions, v) }) {
			o.anyReviewVersions = true
		}
		if names.Has(w.name) {
			o.duplicateNames = true
		}
		names.Insert(w.name)
		for _, s := range []*metav1.LabelSelector{w.namespaceSelector, w.objectSelector} {
			if s != nil && len(metav1validation.ValidateLabelSelector(s, strictSelectorCheck, nil)) > 0 {
				o.looseSelectors = true
			}
		}
		for _, mc := range w.matchConditions {
			o.stored.add(exprMatchCondition, strings.TrimSpace(mc.Expression))
		}
		o.caBundles.Insert(string(w.clientConfig.CABundle))
		if o.keepMatchConditions && !reflect.DeepEqual(w.matchConditions, now[i].matchConditions) {
			o.keepMatchConditions = false
		}
	}
	return o
}

// validateWebhooks checks the webhooks of a configuration.
func (c celEnvironments) validateWebhooks(hooks []webhookFields, o webhookOptions) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, h := range hooks {
		p := field.NewPath("webhooks").Index(i)
		errs = append(errs, c.validateWebhook(h, o, p)...)
		errs = append(errs, validateReviewVersions(h.admissionReviewVersions, !o.anyReviewVersions, p.Child("admissionReviewVersions"))...)
		if !o.duplicateNames && h.name != "" {
			if names.Has(h.name) {
				errs = append(errs, field.Duplicate(p.Child("name"), h.name))
			}
			names.Insert(h.name)
		}
	}
	return errs
}

// validateWebhook checks one webhook.
func (c celEnvironments) validateWebhook(h webhookFields, o webhookOptions, p *field.Path) field.ErrorList {
	errs := utilvalidation.IsFullyQualifiedName(p.Child("name"), h.name)
	for i := range h.rules {
		errs = append(errs, validateRuleWithOperations(&h.rules[i], p.Child("rules").Index(i))...)
	}
	if h.failurePolicy != nil && !supported(*h.failurePolicy, failurePolicies) {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *h.failurePolicy, failurePolicies))
	}
	if h.matchPolicy != nil && !supported(*h.matchPolicy, matchPolicies) {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *h.matchPolicy, matchPolicies))
	}
	sideEffects := noSideEffects
	if o.anySideEffects {
		sideEffects = allSideEffects
	}
	switch {
	case h.sideEffects == nil:
		errs = append(errs, field.Required(p.Child("sideEffects"), "must specify one of "+strings.Join(sideEffects, ", ")))
	case !supported(*h.sideEffects, sideEffects):
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *h.sideEffects, sideEffects))
	}
	if t := h.timeoutSeconds; t != nil && (*t > 30 || *t < 1) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *t, "the timeout value must be between 1 and 30 seconds"))
	}
	selectors := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: o.looseSelectors}
	if h.namespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(h.namespaceSelector, selectors, p.Child("namespaceSelector"))...)
	}
	if h.objectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(h.objectSelector, selectors, p.Child("objectSelector"))...)
	}
	if r := h.reinvocationPolicy; r != nil && !supported(*r, reinvocationPolicy) {
		errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), *r, reinvocationPolicy))
	}
	errs = append(errs, validateClientConfig(h.clientConfig, o, p.Child("clientConfig"))...)
	if !o.keepMatchConditions {
		errs = append(errs, c.validateMatchConditions(h.matchConditions, false, o.stored, p.Child("matchConditions"))...)
	}
	return errs
}

// validateClientConfig checks where a webhook is called: exactly one of an https URL
// (no user, query or fragment) and a service reference; and its CA bundle, which must
// hold PEM certificates (Kubernetes finds a bad one only when it calls the webhook).
func validateClientConfig(cc admissionregistrationv1.WebhookClientConfig, o webhookOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(p, "exactly one of url or service is required"))
	case cc.URL != nil:
		errs = append(errs, webhook.ValidateWebhookURL(p.Child("url"), *cc.URL, true)...)
	default:
		s := cc.Service
		// Kubernetes passes the name and the namespace in this order, each where the
		// other is expected: a missing name is reported as the namespace's, and the
		// other way round. Concord says what Kubernetes says.
		errs = append(errs, webhook.ValidateWebhookService(p.Child("service"), s.Name, s.Namespace, s.Path, ptr.Deref(s.Port, 443))...)
	}
	if len(cc.CABundle) > 0 && !o.caBundles.Has(string(cc.CABundle)) {
		if err := parseCABundle(cc.CABundle); err != nil {
			errs = append(errs, field.Invalid(p.Child("caBundle"), field.OmitValueType{}, err.Error()))
		}
	}
	return errs
}

// errCABundle means a CA bundle holds no certificate.
var errCABundle = errors.New("must be PEM-encoded CA certificates")

// parseCABundle checks that b holds at least one certificate a TLS client can trust,
// read as Go's certificate pool reads a bundle (and so as the webhook's client does):
// other PEM blocks and text around them are skipped, as Kubernetes skips them.
func parseCABundle(b []byte) error {
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return fmt.Errorf("%w: no certificate found", errCABundle)
	}
	return nil
}

// validateReviewVersions checks a webhook's admissionReviewVersions: no duplicates,
// DNS labels, and (unless the stored configuration had none) one Concord sends.
func validateReviewVersions(versions []string, requireKnown bool, p *field.Path) field.ErrorList {
	if len(versions) == 0 {
		return field.ErrorList{field.Required(p, "must specify one of "+strings.Join(reviewVersions, ", "))}
	}
	var errs field.ErrorList
	seen := sets.New[string]()
	known := false
	for i, v := range versions {
		if seen.Has(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, "duplicate version"))
			continue
		}
		seen.Insert(v)
		for _, msg := range utilvalidation.IsDNS1035Label(v) {
			errs = append(errs, field.Invalid(p.Index(i), v, msg))
		}
		known = known || slices.Contains(reviewVersions, v)
	}
	if requireKnown && !known {
		errs = append(errs, field.Invalid(p, versions, "must include at least one of "+strings.Join(reviewVersions, ", ")))
	}
	return errs
}

// validateMatchConditions checks and compiles match conditions (of a webhook or a
// policy; a policy's may use params).
func (c celEnvironments) validateMatchConditions(conds []admissionregistrationv1.MatchCondition, params bool, stored expressionSet, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > maxMatchConditions {
		errs = append(errs, field.TooMany(p, len(conds), maxMatchConditions))
	}
	names := sets.New[string]()
	comp := c.compiler()
	for i, mc := range conds {
		ip := p.Index(i)
		if expr := strings.TrimSpace(mc.Expression); expr == "" {
			errs = append(errs, field.Required(ip.Child("expression"), ""))
		} else {
			errs = append(errs, c.check(comp, &matchconditions.MatchCondition{Expression: expr},
				plugincel.OptionalVariableDeclarations{HasParams: params, HasAuthorizer: true},
				stored.envType(exprMatchCondition, expr), ip.Child("expression"))...)
		}
		if mc.Name == "" {
			errs = append(errs, field.Required(ip.Child("name"), ""))
		} else {
			errs = append(errs, validateQualifiedName(mc.Name, ip.Child("name"))...)
		}
		if mc.Name != "" {
			if names.Has(mc.Name) {
				errs = append(errs, field.Duplicate(ip.Child("name"), mc.Name))
			}
			names.Insert(mc.Name)
		}
	}
	return errs
}
