package kubesemantics

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	_ "k8s.io/kubernetes/pkg/apis/core/install"   // core's types, defaults and conversions
	_ "k8s.io/kubernetes/pkg/apis/events/install" // events.k8s.io's, whose Events are core's internally
)

// templatePath is where a workload's Pod template is, podTemplatePath a PodTemplate's.
var templatePath, podTemplatePath = field.NewPath("spec", "template"), field.NewPath("template")

func init() { groups = append(groups, coreKinds) }

// coreKinds are the strategies of the core group, and of events.k8s.io's Events,
// which kube stores with core's and gives core's Event strategy. Each file core_<x>.go
// adds one part.
func coreKinds() map[schema.GroupResource]strategy {
	out := map[schema.GroupResource]strategy{}
	for _, part := range []func() map[schema.GroupResource]strategy{
		coreDataKinds, coreEventKinds, coreServiceKinds, coreNamespaceKinds, coreNodeKinds, coreVolumeKinds, corePodKinds, bindingKinds,
	} {
		maps.Copy(out, part())
	}
	return out
}

// coreDataKinds are the strategies of the core resources that are mostly data:
// ConfigMaps, Secrets, ServiceAccounts, Endpoints, PodTemplates.
func coreDataKinds() map[schema.GroupResource]strategy {
	return map[schema.GroupResource]strategy{
		// Computed on every read (package componentstatus), never written: kube's
		// types for its table and its reads only.
		{Resource: "componentstatuses"}: kind[*core.ComponentStatus]{}.erase(),
		{Resource: "configmaps"}: kind[*core.ConfigMap]{
			validate: func(_ context.Context, c *core.ConfigMap) field.ErrorList { return corevalidation.ValidateConfigMap(c) },
			validateUpdate: func(_ context.Context, c, old *core.ConfigMap) field.ErrorList {
				return corevalidation.ValidateConfigMapUpdate(c, old)
			},
		}.erase(),
		{Resource: "secrets"}: kind[*core.Secret]{
			validate:   func(_ context.Context, s *core.Secret) field.ErrorList { return corevalidation.ValidateSecret(s) },
			warnCreate: func(_ context.Context, s *core.Secret) []string { return tlsSecretWarnings(s) },
			prepareUpdate: func(_ context.Context, s, old *core.Secret) {
				// An update that leaves the type out keeps it (the type is immutable).
				if s.Type == "" {
					s.Type = old.Type
				}
			},
			validateUpdate: func(_ context.Context, s, old *core.Secret) field.ErrorList {
				return corevalidation.ValidateSecretUpdate(s, old)
			},
			warnUpdate: func(_ context.Context, s, _ *core.Secret) []string { return tlsSecretWarnings(s) },
		}.erase(),
		{Resource: "serviceaccounts"}: kind[*core.ServiceAccount]{
			prepareCreate: func(_ context.Context, sa *core.ServiceAccount) { secretNamesOnly(sa) },
			validate: func(_ context.Context, sa *core.ServiceAccount) field.ErrorList {
				return corevalidation.ValidateServiceAccount(sa)
			},
			warnCreate:    func(_ context.Context, sa *core.ServiceAccount) []string { return mountableSecretsWarnings(sa, nil) },
			prepareUpdate: func(_ context.Context, sa, _ *core.ServiceAccount) { secretNamesOnly(sa) },
			validateUpdate: func(_ context.Context, sa, old *core.ServiceAccount) field.ErrorList {
				return corevalidation.ValidateServiceAccountUpdate(sa, old)
			},
			warnUpdate: func(_ context.Context, sa, old *core.ServiceAccount) []string {
				return mountableSecretsWarnings(sa, old)
			},
		}.erase(),
		{Resource: "endpoints"}: kind[*core.Endpoints]{
			validate: func(_ context.Context, e *core.Endpoints) field.ErrorList {
				return corevalidation.ValidateEndpointsCreate(e)
			},
			warnCreate: func(_ context.Context, e *core.Endpoints) []string { return endpointsWarnings(e) },
			validateUpdate: func(_ context.Context, e, old *core.Endpoints) field.ErrorList {
				return corevalidation.ValidateEndpointsUpdate(e, old)
			},
			warnUpdate: func(_ context.Context, e, _ *core.Endpoints) []string { return endpointsWarnings(e) },
		}.erase(),
		{Resource: "podtemplates"}: kind[*core.PodTemplate]{
			prepareCreate: func(_ context.Context, t *core.PodTemplate) {
				t.Generation = 1
				pod.DropDisabledTemplateFields(&t.Template, nil)
			},
			validate: func(_ context.Context, t *core.PodTemplate) field.ErrorList {
				return corevalidation.ValidatePodTemplate(t, pod.GetValidationOptionsFromPodTemplate(&t.Template, nil))
			},
			warnCreate: func(ctx context.Context, t *core.PodTemplate) []string {
				return pod.GetWarningsForPodTemplate(ctx, podTemplatePath, &t.Template, nil)
			},
			prepareUpdate: func(_ context.Context, t, old *core.PodTemplate) {
				pod.DropDisabledTemplateFields(&t.Template, &old.Template)
				if !apiequality.Semantic.DeepEqual(t.Template, old.Template) {
					t.Generation = old.Generation + 1
				}
			},
			validateUpdate: func(_ context.Context, t, old *core.PodTemplate) field.ErrorList {
				return corevalidation.ValidatePodTemplateUpdate(t, old, pod.GetValidationOptionsFromPodTemplate(&t.Template, &old.Template))
			},
			warnUpdate: func(ctx context.Context, t, old *core.PodTemplate) []string {
				return templateUpdateWarnings(ctx, podTemplatePath, t.Generation != old.Generation, &t.Template, &old.Template)
			},
		}.erase(),
	}
}

// coreEventKinds are the strategies of core Events and events.k8s.io Events: one
// strategy, whose validation depends on the group-version the request used.
func coreEventKinds() map[schema.GroupResource]strategy {
	events := kind[*core.Event]{
		validate: func(ctx context.Context, e *core.Event) field.ErrorList {
			return corevalidation.ValidateEventCreate(e, requestGroupVersion(ctx))
		},
		validateUpdate: func(ctx context.Context, e, old *core.Event) field.ErrorList {
			return corevalidation.ValidateEventUpdate(e, old, requestGroupVersion(ctx))
		},
	}.erase()
	return map[schema.GroupResource]strategy{
		{Resource: "events"}:                         events,
		{Group: "events.k8s.io", Resource: "events"}: events,
	}
}

// requestGroupVersion is the group-version of the request in progress (empty if ctx
// names none).
func requestGroupVersion(ctx context.Context) schema.GroupVersion {
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	if !ok {
		return schema.GroupVersion{}
	}
	return schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
}

// requestSubresource is the subresource the request in progress writes ("" for the
// main resource).
func requestSubresource(ctx context.Context) string {
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok {
		return info.Subresource
	}
	return ""
}

// tlsSecretWarnings warns of a kubernetes.io/tls Secret whose certificate and key do
// not make a key pair.
func tlsSecretWarnings(s *core.Secret) []string {
	if s.Type != core.SecretTypeTLS {
		return nil
	}
	if _, err := tls.X509KeyPair(s.Data[core.TLSCertKey], s.Data[core.TLSPrivateKeyKey]); err != nil {
		return []string{err.Error()}
	}
	return nil
}

// secretNamesOnly reduces a ServiceAccount's secret references to their names, the
// only part of them that is used.
func secretNamesOnly(sa *core.ServiceAccount) {
	for i := range sa.Secrets {
		sa.Secrets[i] = core.ObjectReference{Name: sa.Secrets[i].Name}
	}
}

// enforceMountableSecrets is the ServiceAccount annotation, deprecated since 1.32,
// that limits its Pods to the Secrets it lists.
const enforceMountableSecrets = "kubernetes.io/enforce-mountable-secrets"

// mountableSecretsWarnings warns of a ServiceAccount that starts using the
// enforce-mountable-secrets annotation (old: nil on creation).
func mountableSecretsWarnings(sa, old *core.ServiceAccount) []string {
	if old != nil {
		if _, had := old.Annotations[enforceMountableSecrets]; had {
			return nil
		}
	}
	if _, has := sa.Annotations[enforceMountableSecrets]; !has {
		return nil
	}
	path := field.NewPath("metadata", "annotations").Key(enforceMountableSecrets)
	return []string{fmt.Sprintf("%s: deprecated in v1.32+; prefer separate namespaces to isolate access to mounted secrets", path)}
}

// The label, and its value, that mark Endpoints the endpoints controller maintains.
const (
	endpointsManagedBy  = "endpoints.kubernetes.io/managed-by"
	endpointsController = "endpoint-controller"
)

// endpointsWarnings warns of addresses written in a form Kubernetes discourages, unless
// the endpoints controller wrote them.
func endpointsWarnings(e *core.Endpoints) []string {
	if e.Labels[endpointsManagedBy] == endpointsController {
		return nil
	}
	var out []string
	for i, subset := range e.Subsets {
		path := field.NewPath("subsets").Index(i)
		for j, a := range subset.Addresses {
			out = append(out, utilvalidation.GetWarningsForIP(path.Child("addresses").Index(j).Child("ip"), a.IP)...)
		}
		for j, a := range subset.NotReadyAddresses {
			out = append(out, utilvalidation.GetWarningsForIP(path.Child("notReadyAddresses").Index(j).Child("ip"), a.IP)...)
		}
	}
	return out
}

// templateUpdateWarnings are the warnings of a Pod template's update: none unless it
// changed.
func templateUpdateWarnings(ctx context.Context, path *field.Path, changed bool, t, old *core.PodTemplateSpec) []string {
	if !changed {
		return nil
	}
	return pod.GetWarningsForPodTemplate(ctx, path, t, old)
}
