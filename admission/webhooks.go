package admission

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	admissionregistrationlisters "k8s.io/client-go/listers/admissionregistration/v1"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Admission webhooks are k8s.io/apiserver's plugins (ValidatingAdmissionWebhook and
// MutatingAdmissionWebhook): they read the webhook configurations through the chain's
// informers, match requests by rules (with equivalent resources under matchPolicy
// Equivalent, converted through the registry's objects), namespace and object
// selectors and match conditions, and call each webhook with an AdmissionReview of
// the first version it lists that they know (v1, v1beta1), bounded by its
// timeoutSeconds, under its failurePolicy; services are resolved by the resolver the
// chain is given.

// webhookPlugin is what both webhook plugins are, as the chain assembles them.
type webhookPlugin interface {
	admission.Interface
	admission.InitializationValidator
	SetAPIServerID(string)
	SetServiceResolver(webhookutil.ServiceResolver)
}

// newWebhooks returns the mutating and validating webhook plugins, initialized with
// init, resolving services with resolver (nil: their DNS names,
// <name>.<namespace>.svc).
func newWebhooks(init admission.PluginInitializer, serverID string, resolver webhookutil.ServiceResolver) (*mutating.Plugin, *validating.Plugin, error) {
	m, err := mutating.NewMutatingWebhook(nil)
	if err != nil {
		return nil, nil, err
	}
	v, err := validating.NewValidatingAdmissionWebhook(nil)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range []webhookPlugin{m, v} {
		p.SetAPIServerID(serverID)
		if resolver != nil {
			p.SetServiceResolver(resolver)
		}
		init.Initialize(p)
		if err := p.ValidateInitialization(); err != nil {
			return nil, nil, fmt.Errorf("admission webhooks: %w", err)
		}
	}
	return m, v, nil
}

// mutatingWebhooks is the mutating webhook plugin, not called once the configurations
// are known and none exists: with none it changes nothing, but would copy every object
// it is given (kube's plugin keeps its last output for reinvocation). Before they are
// known the plugin itself decides (it waits for them, as kube's does).
type mutatingWebhooks struct {
	*mutating.Plugin
	synced         func() bool
	configurations admissionregistrationlisters.MutatingWebhookConfigurationLister
}

// Admit calls the webhooks of a's object, if there are any.
func (m mutatingWebhooks) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if !m.synced() {
		return m.Plugin.Admit(ctx, a, o)
	}
	if all, err := m.configurations.List(labels.Everything()); err == nil && len(all) == 0 {
		return nil
	}
	return m.Plugin.Admit(ctx, a, o)
}

// metricPrefix starts the names of k8s.io/apiserver's admission metrics.
const metricPrefix = "apiserver_admission_"

// Gatherer gathers the admission metrics k8s.io/apiserver's plugins keep in
// component-base's process-wide registry (apiserver_admission_webhook_*, the
// policies' and the match conditions'), for the server's /metrics. Servers of one
// process share them.
func Gatherer() prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		all, err := legacyregistry.DefaultGatherer.Gather()
		var out []*dto.MetricFamily
		for _, mf := range all {
			if strings.HasPrefix(mf.GetName(), metricPrefix) {
				out = append(out, mf)
			}
		}
		return out, err
	})
}
