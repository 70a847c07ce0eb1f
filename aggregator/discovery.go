package aggregator

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/concordproject/concord/reconcile"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// DiscoveryName names the discovery controller in logs and metrics.
const DiscoveryName = "apiservice-discovery-controller"

// discovered is the last discovery read from a group-version's backend.
type discovered struct {
	list *metav1.APIResourceList // nil until one read succeeded
	err  error                   // of the last read
}

// RunDiscovery keeps, until ctx is done, the discovery and the OpenAPI documents of
// every remote APIService's group-version: read from its backend when the
// APIService, its Service or its EndpointSlices change, and periodically; started is
// called once it follows them (kube-aggregator's discovery and OpenAPI controllers).
// Every server runs it.
func (a *Aggregator) RunDiscovery(ctx context.Context, metrics *reconcile.Metrics, started func()) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("apiservice-discovery"))
	ctrl := reconcile.New(DiscoveryName, reconcile.Func[string](a.reconcileDiscovery), reconcile.Options[string]{Workers: 2, Metrics: metrics})
	return a.follow(ctx, ctrl, started)
}

// reconcileDiscovery reads the discovery of APIService name from its backend. A
// failed read keeps the last good one, marked stale.
func (a *Aggregator) reconcileDiscovery(ctx context.Context, name string) (reconcile.Result, error) {
	svc, err := a.apiServices.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	if err != nil || svc.Spec.Service == nil {
		a.forget(ctx, name)
		return reconcile.Result{}, nil
	}
	gv := schema.GroupVersion{Group: svc.Spec.Group, Version: svc.Spec.Version}
	list, err := a.fetch(ctx, svc)
	a.mu.Lock()
	d := a.discovery[gv]
	if d == nil {
		d = &discovered{}
		a.discovery[gv] = d
	}
	d.err = err
	old := d.list
	if err == nil {
		d.list = list
	}
	a.mu.Unlock()
	if err == nil {
		a.readOpenAPI(ctx, svc, list, old)
	}
	if err != nil {
		klog.FromContext(ctx).V(3).Info("Discovery of an aggregated API failed", "apiservice", name, "err", err)
		return reconcile.Result{RequeueAfter: recheckFailed}, nil
	}
	return reconcile.Result{RequeueAfter: recheckPassed}, nil
}

// forget drops the discovery and OpenAPI documents of APIService name (deleted, or
// local now).
func (a *Aggregator) forget(ctx context.Context, name string) {
	version, group, _ := strings.Cut(name, ".")
	gv := schema.GroupVersion{Group: group, Version: version}
	a.mu.Lock()
	_, had := a.discovery[gv]
	delete(a.discovery, gv)
	a.mu.Unlock()
	if had && a.openAPI != nil {
		a.openAPI(ctx, gv, nil, nil)
	}
}

// Discovery returns the aggregated discovery of the remote group-versions whose
// backends have answered at least once: groups by spec.groupPriorityMinimum, highest
// first, then by name; each group's versions by spec.versionPriority, highest first,
// then newest first. A version whose last read failed is marked stale.
func (a *Aggregator) Discovery() []apidiscoveryv2.APIGroupDiscovery {
	all, err := a.apiServices.List(labels.Everything())
	if err != nil {
		return nil
	}
	all = slices.DeleteFunc(slices.Clone(all), func(s *apiregistrationv1.APIService) bool { return s.Spec.Service == nil })
	slices.SortFunc(all, func(x, y *apiregistrationv1.APIService) int {
		return cmp.Or(
			cmp.Compare(y.Spec.GroupPriorityMinimum, x.Spec.GroupPriorityMinimum),
			strings.Compare(x.Spec.Group, y.Spec.Group),
			cmp.Compare(y.Spec.VersionPriority, x.Spec.VersionPriority),
			-version.CompareKubeAwareVersionStrings(x.Spec.Version, y.Spec.Version))
	})
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []apidiscoveryv2.APIGroupDiscovery
	for _, s := range all {
		d := a.discovery[schema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}]
		if d == nil || d.list == nil {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Name != s.Spec.Group {
			out = append(out, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: s.Spec.Group}})
		}
		g := &out[len(out)-1]
		vd := versionDiscovery(s.Spec.Group, s.Spec.Version, d.list)
		if d.err != nil {
			vd.Freshness = apidiscoveryv2.DiscoveryFreshnessStale
		}
		g.Versions = append(g.Versions, vd)
	}
	return out
}

// versionDiscovery converts a backend's legacy discovery of group/version to
// aggregated discovery: each resource with its subresources.
func versionDiscovery(group, ver string, list *metav1.APIResourceList) apidiscoveryv2.APIVersionDiscovery {
	vd := apidiscoveryv2.APIVersionDiscovery{Version: ver, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
	index := map[string]int{}
	for _, r := range list.APIResources {
		if strings.Contains(r.Name, "/") {
			continue
		}
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		index[r.Name] = len(vd.Resources)
		vd.Resources = append(vd.Resources, apidiscoveryv2.APIResourceDiscovery{
			Resource:         r.Name,
			ResponseKind:     kindOf(group, ver, r),
			Scope:            scope,
			SingularResource: r.SingularName,
			Verbs:            r.Verbs,
			ShortNames:       r.ShortNames,
			Categories:       r.Categories,
		})
	}
	for _, r := range list.APIResources {
		parent, sub, ok := strings.Cut(r.Name, "/")
		i, known := index[parent]
		if !ok || !known {
			continue
		}
		vd.Resources[i].Subresources = append(vd.Resources[i].Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource: sub, ResponseKind: kindOf(group, ver, r), Verbs: r.Verbs,
		})
	}
	return vd
}

// kindOf is the kind a legacy discovery entry answers with: its own group and
// version if it names them, else the list's.
func kindOf(group, ver string, r metav1.APIResource) *metav1.GroupVersionKind {
	gvk := &metav1.GroupVersionKind{Group: group, Version: ver, Kind: r.Kind}
	if r.Group != "" || r.Version != "" {
		gvk.Group, gvk.Version = r.Group, r.Version
	}
	return gvk
}
