package builtin

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/concordproject/concord/admission"
	"github.com/concordproject/concord/aggregator"
	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/clusterproxy"
	"github.com/concordproject/concord/componentstatus"
	"github.com/concordproject/concord/kubesemantics"
	"github.com/concordproject/concord/namespace"
	"github.com/concordproject/concord/podbinding"
	"github.com/concordproject/concord/podconnect"
	"github.com/concordproject/concord/podeviction"
	"github.com/concordproject/concord/priorityclass"
	"github.com/concordproject/concord/quota"
	"github.com/concordproject/concord/rbac"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/service"
	"github.com/concordproject/concord/storageversion"
	"github.com/concordproject/concord/versionskew"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Options tune the behaviour of built-in resources.
type Options struct {
	// EventTTL is how long Events live after their last write (--event-ttl).
	EventTTL time.Duration
	// Authorization answers the access reviews (SubjectAccessReview and the
	// others), Authentication the TokenReviews; required by servers (tools that
	// serve nothing leave them nil).
	Authorization  *auth.Authorization
	Authentication *auth.Authentication
	// ServiceAccountTokens issues the tokens of TokenRequests (nil: as above).
	ServiceAccountTokens *ServiceAccountTokens
	// Services gives Services the allocation of cluster IPs and node ports, and what
	// kube's Service storage does around it (nil: Services are served with their
	// strategy alone, where IPAddresses and ServiceCIDRs are not served in v1).
	Services *service.Services
	// StorageVersions says who writes StorageVersions besides the servers themselves:
	// the aggregated servers of their groups; anyone allowed may delete them while
	// this server does not maintain them.
	StorageVersions storageversion.APIOptions
	// Semantics give the built-in resources kube knows Kubernetes' own defaults,
	// preparation and validation (nil: tools that serve nothing; their resources are
	// validated by their schemas alone).
	Semantics *kubesemantics.Semantics
	// Binder binds Pods: their binding subresource and the bindings resource (nil:
	// tools that serve nothing; Bindings are then served as data).
	Binder *podbinding.Binder
	// ComponentStatuses probes the components ComponentStatuses report (nil: tools
	// that serve nothing).
	ComponentStatuses *componentstatus.Prober
	// Evictor evicts Pods through their eviction subresource, Connector answers
	// their log, exec, attach and portforward subresources (nil: not served).
	Evictor   *podeviction.Evictor
	Connector *podconnect.Connector
	// Proxy forwards the proxy subresources of Pods, Services and Nodes (nil: not
	// served).
	Proxy *clusterproxy.Proxy
}

// ErrMissing means the API catalog lacks a resource every server needs.
var ErrMissing = errors.New("the API catalog does not define a resource every server needs")

// required are the resources a server cannot run without: namespaces hold every
// namespaced object, leases the servers' identities and elections.
var required = []schema.GroupResource{namespace.GroupResource, leasesGR}

// configurers names, for each built-in resource with behaviour, what gives it.
func configurers(opts Options) map[schema.GroupResource]func(*registry.Resource) error {
	table := map[schema.GroupResource]func(*registry.Resource) error{
		namespace.GroupResource:      namespace.Configure,
		quota.GroupResource:          quota.Configure,
		rbac.RoleBindingsGR:          rbac.ConfigureRoleBindings,
		rbac.ClusterRoleBindingsGR:   rbac.ConfigureClusterRoleBindings,
		storageversion.GroupResource: storageversion.ConfigureWith(opts.StorageVersions),
		aggregator.GroupResource:     aggregator.Configure,
		priorityclass.GroupResource:  priorityclass.Configure,
		service.IPAddresses:          service.ConfigureIPAddresses,
		service.ServiceCIDRs:         service.ConfigureServiceCIDRs,
		storageVersionMigrationsGR:   configureStorageVersionMigrations,
		leasesGR:                     configureLeases,
		deploymentsGR:                configureDeployments,
		cronJobsGR:                   configureCronJobs,
		jobsGR:                       configureJobs,
		replicationControllersGR:     configureReplicationControllers,
		secretsGR:                    configureSecrets,
		serviceAccountsGR:            configureServiceAccounts(opts.ServiceAccountTokens),
		coreEventsGR:                 func(r *registry.Resource) error { return configureEvents(r, coreEventFields, opts.EventTTL) },
		eventsGR:                     func(r *registry.Resource) error { return configureEvents(r, eventsEventFields, opts.EventTTL) },
	}
	pods := []func(*registry.Resource) error{configurePods}
	var services []func(*registry.Resource) error
	if opts.Services != nil {
		services = append(services, opts.Services.Configure)
	}
	if opts.Proxy != nil {
		pods = append(pods, opts.Proxy.ConfigurePods)
		services = append(services, opts.Proxy.ConfigureServices)
		table[clusterproxy.Nodes] = opts.Proxy.ConfigureNodes
	}
	if len(services) > 0 {
		table[service.GroupResource] = all(services)
	}
	if opts.Binder != nil {
		pods = append(pods, opts.Binder.ConfigurePods)
		table[podbinding.Bindings] = opts.Binder.ConfigureBindings
	}
	if opts.ComponentStatuses != nil {
		table[componentstatus.GroupResource] = opts.ComponentStatuses.Configure
	}
	if opts.Evictor != nil {
		pods = append(pods, opts.Evictor.ConfigurePods)
	}
	if opts.Connector != nil {
		pods = append(pods, opts.Connector.ConfigurePods)
	}
	table[podbinding.Pods] = all(pods)
	maps.Copy(table, reviewConfigurers(opts))
	maps.Copy(table, admission.Configurers())
	return table
}

// all configures a resource with each of configure in turn.
func all(configure []func(*registry.Resource) error) func(*registry.Resource) error {
	return func(res *registry.Resource) error {
		for _, f := range configure {
			if err := f(res); err != nil {
				return err
			}
		}
		return nil
	}
}

// conditionalUpdatesOnly are the built-in resources whose updates must carry the
// resourceVersion they replace, as in Kubernetes (their strategies do not allow
// unconditional updates); every other built-in resource allows them.
var conditionalUpdatesOnly = map[schema.GroupResource]bool{
	leasesGR: true,
	{Group: "coordination.k8s.io", Resource: "leasecandidates"}: true,
	{Group: "policy", Resource: "poddisruptionbudgets"}:         true,
	admission.ValidatingPoliciesGR:                              true,
	admission.ValidatingPolicyBindingsGR:                        true,
	admission.MutatingPoliciesGR:                                true,
	admission.MutatingPolicyBindingsGR:                          true,
	admission.ValidatingWebhookConfigurationsGR:                 true,
	admission.MutatingWebhookConfigurationsGR:                   true,
	storageversion.GroupResource:                                true,
	storageVersionMigrationsGR:                                  true,
	aggregator.GroupResource:                                    true,
	// Their strategies in kube (see package kubesemantics) refuse unconditional updates
	// too.
	{Group: "node.k8s.io", Resource: "runtimeclasses"}:                 true,
	{Group: "storage.k8s.io", Resource: "csidrivers"}:                  true,
	{Group: "storage.k8s.io", Resource: "csinodes"}:                    true,
	{Group: "storage.k8s.io", Resource: "csistoragecapacities"}:        true,
	{Group: "storage.k8s.io", Resource: "volumeattachments"}:           true,
	{Group: "scheduling.k8s.io", Resource: "workloads"}:                true,
	{Group: "scheduling.k8s.io", Resource: "podgroups"}:                true,
	{Group: "scheduling.k8s.io", Resource: "compositepodgroups"}:       true,
	{Group: "resource.k8s.io", Resource: "resourcepoolstatusrequests"}: true,
}

// returnsDeletedObject are the built-in resources whose deletion answers the object
// as it was last stored, deleted or not, rather than a Status naming it, as their
// registries in kube-apiserver 1.37 do (ReturnDeletedObject); the others answer the
// object only while it stays (its finalizers, its grace period).
var returnsDeletedObject = map[schema.GroupResource]bool{
	namespace.GroupResource:                                            true,
	{Resource: "persistentvolumes"}:                                    true,
	{Resource: "persistentvolumeclaims"}:                               true,
	podbinding.Pods:                                                    true,
	{Resource: "podtemplates"}:                                         true,
	quota.GroupResource:                                                true,
	service.GroupResource:                                              true,
	serviceAccountsGR:                                                  true,
	{Group: "resource.k8s.io", Resource: "deviceclasses"}:              true,
	{Group: "resource.k8s.io", Resource: "resourceclaims"}:             true,
	{Group: "resource.k8s.io", Resource: "resourceclaimtemplates"}:     true,
	{Group: "resource.k8s.io", Resource: "resourcepoolstatusrequests"}: true,
	{Group: "resource.k8s.io", Resource: "resourceslices"}:             true,
	{Group: "storage.k8s.io", Resource: "csidrivers"}:                  true,
	{Group: "storage.k8s.io", Resource: "csinodes"}:                    true,
	{Group: "storage.k8s.io", Resource: "storageclasses"}:              true,
	{Group: "storage.k8s.io", Resource: "volumeattachments"}:           true,
	{Group: "storage.k8s.io", Resource: "volumeattributesclasses"}:     true,
}

// Configure returns the built-in resources of a server: resources (the catalog's, not
// yet in a registry) with the behaviour each owner defines, and Concord's own
// definitions in place of the catalog's (see ownResources). It checks that the
// resources every server needs are there.
func Configure(resources []*registry.Resource, opts Options) ([]*registry.Resource, error) {
	out := slices.Clone(resources)
	for _, own := range ownResources() {
		out = slices.DeleteFunc(out, func(r *registry.Resource) bool { return r.GroupResource() == own.GroupResource() })
		out = append(out, own)
	}
	if opts.Services != nil && opts.Semantics != nil {
		opts.Services.CheckIPFieldsWith(opts.Semantics.ServiceIPFieldErrors)
	}
	table := configurers(opts)
	have := map[schema.GroupResource]bool{}
	for _, r := range out {
		gr := r.GroupResource()
		have[gr] = true
		r.UnconditionalUpdate = !conditionalUpdatesOnly[gr]
		r.ReturnDeletedObject = returnsDeletedObject[gr]
		if configure, ok := table[gr]; ok {
			if err := configure(r); err != nil {
				return nil, fmt.Errorf("%s: %w", gr, err)
			}
		}
		if opts.Semantics != nil {
			opts.Semantics.Configure(r)
		}
	}
	for _, gr := range required {
		if !have[gr] {
			return nil, fmt.Errorf("%w: %s", ErrMissing, gr)
		}
	}
	return out, nil
}

// ownResources are the resources Concord's own machinery depends on and defines
// itself, the same in every release whatever the catalog says of them, so that
// servers of every release a fleet mixes serve them alike: the storage-migration API
// and the version skew report (package versionskew).
func ownResources() []*registry.Resource {
	return []*registry.Resource{storageVersionMigrations(), resourceOf(versionskew.CRD())}
}
