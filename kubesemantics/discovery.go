package kubesemantics

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/apis/discovery"
	discoveryvalidation "k8s.io/kubernetes/pkg/apis/discovery/validation"
	"k8s.io/kubernetes/pkg/features"
	netutils "k8s.io/utils/net"

	_ "k8s.io/kubernetes/pkg/apis/discovery/install" // discovery's types, defaults and conversions
)

func init() { groups = append(groups, discoveryKinds) }

// sliceControllers are the managed-by labels of the EndpointSlices kube's own
// controllers write (its endpointslice and endpointslicemirroring controllers): their
// addresses draw no warnings.
var sliceControllers = map[string]bool{
	"endpointslice-controller.k8s.io":          true,
	"endpointslicemirroring-controller.k8s.io": true,
}

// discoveryKinds are the strategies of group discovery.k8s.io.
func discoveryKinds() map[schema.GroupResource]strategy {
	return map[schema.GroupResource]strategy{
		{Group: discovery.GroupName, Resource: "endpointslices"}: endpointSliceKind().erase(),
	}
}

func endpointSliceKind() kind[*discovery.EndpointSlice] {
	return kind[*discovery.EndpointSlice]{
		prepareCreate: func(ctx context.Context, s *discovery.EndpointSlice) {
			s.Generation = 1
			dropNodeHints(s, nil)
			dropDeprecatedTopology(ctx, s, nil)
		},
		validate: func(_ context.Context, s *discovery.EndpointSlice) field.ErrorList {
			return allowLoopback(s, discoveryvalidation.ValidateEndpointSliceCreate(s))
		},
		warnCreate: func(_ context.Context, s *discovery.EndpointSlice) []string {
			var out []string
			if s.AddressType == discovery.AddressTypeFQDN {
				out = append(out, fmt.Sprintf("%s: FQDN endpoints are deprecated", field.NewPath("spec", "addressType")))
			}
			return append(out, endpointAddressWarnings(s)...)
		},
		prepareUpdate: func(ctx context.Context, s, old *discovery.EndpointSlice) {
			if endpointSliceChanged(s, old) {
				s.Generation = old.Generation + 1
			}
			dropNodeHints(s, old)
			dropDeprecatedTopology(ctx, s, old)
		},
		validateUpdate: func(_ context.Context, s, old *discovery.EndpointSlice) field.ErrorList {
			return allowLoopback(s, discoveryvalidation.ValidateEndpointSliceUpdate(s, old))
		},
		warnUpdate: func(_ context.Context, s, _ *discovery.EndpointSlice) []string { return endpointAddressWarnings(s) },
	}
}

// loopbackDetail is the detail of kube's refusal of a loopback endpoint address.
const loopbackDetail = "may not be in the loopback range (127.0.0.0/8, ::1/128)"

// allowLoopback returns errs but for kube's refusal of loopback endpoint addresses.
// This is Concord's one departure from kube's EndpointSlice validation: Concord's
// servers advertise their --bind-address, 127.0.0.1 by default, in the kubernetes
// Service's EndpointSlices, and the in-process harness runs aggregated API servers
// and webhooks on loopback, reached through hand-made EndpointSlices. Every other
// refusal of an address (unspecified, link-local) stands.
func allowLoopback(s *discovery.EndpointSlice, errs field.ErrorList) field.ErrorList {
	if s.AddressType == discovery.AddressTypeFQDN {
		return errs
	}
	out := errs[:0:0]
	for _, e := range errs {
		if ip, ok := e.BadValue.(string); !ok || e.Type != field.ErrorTypeInvalid || e.Detail != loopbackDetail || !isLoopback(ip) {
			out = append(out, e)
		}
	}
	return out
}

// isLoopback reports whether s is an IP address in a loopback range.
func isLoopback(s string) bool {
	ip := netutils.ParseIPSloppy(s)
	return ip != nil && ip.IsLoopback()
}

// endpointSliceChanged reports whether an update changes a slice's generation:
// anything but its metadata changed, or its labels did.
func endpointSliceChanged(s, old *discovery.EndpointSlice) bool {
	a, b := *s, *old
	a.ObjectMeta, b.ObjectMeta = old.ObjectMeta, old.ObjectMeta
	return !apiequality.Semantic.DeepEqual(a, b) || !apiequality.Semantic.DeepEqual(s.Labels, old.Labels)
}

// dropNodeHints clears the endpoints' node hints while PreferSameTrafficDistribution
// is off, unless the stored slice (old, nil on create) has some.
func dropNodeHints(s, old *discovery.EndpointSlice) {
	inUse := false
	if old != nil {
		for _, ep := range old.Endpoints {
			inUse = inUse || ep.Hints != nil && ep.Hints.ForNodes != nil
		}
	}
	if gateOrInUse(features.PreferSameTrafficDistribution, inUse) {
		return
	}
	for i := range s.Endpoints {
		if s.Endpoints[i].Hints != nil {
			s.Endpoints[i].Hints.ForNodes = nil
		}
	}
}

// dropDeprecatedTopology clears the endpoints' deprecatedTopology, which only
// discovery.k8s.io/v1beta1 has, when a write in another version changes the
// endpoints. An endpoint without nodeName whose topology named a host the stored
// slice named too keeps that host as its nodeName.
func dropDeprecatedTopology(ctx context.Context, s, old *discovery.EndpointSlice) {
	info, ok := genericapirequest.RequestInfoFrom(ctx)
	if !ok || (schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}) == discoveryv1beta1.SchemeGroupVersion {
		return
	}
	if old != nil && apiequality.Semantic.DeepEqual(s.Endpoints, old.Endpoints) {
		return
	}
	known := map[string]bool{}
	if old != nil {
		for _, ep := range old.Endpoints {
			if host := ep.DeprecatedTopology[corev1.LabelHostname]; host != "" {
				known[host] = true
			}
		}
	}
	for i := range s.Endpoints {
		ep := &s.Endpoints[i]
		host, ok := ep.DeprecatedTopology[corev1.LabelHostname]
		if ep.NodeName == nil && ok && known[host] && len(corevalidation.ValidateNodeName(host, false)) == 0 {
			ep.NodeName = &host
		}
		ep.DeprecatedTopology = nil
	}
}

// endpointAddressWarnings warns of endpoint addresses written in a valid but
// ambiguous form, but for the slices kube's controllers manage.
func endpointAddressWarnings(s *discovery.EndpointSlice) []string {
	if sliceControllers[s.Labels[discoveryv1.LabelManagedBy]] {
		return nil
	}
	var out []string
	for i, ep := range s.Endpoints {
		for j, addr := range ep.Addresses {
			out = append(out, utilvalidation.GetWarningsForIP(field.NewPath("endpoints").Index(i).Child("addresses").Index(j), addr)...)
		}
	}
	return out
}
