package controlplane

import (
	"context"

	"github.com/concordproject/concord/admission"
	"github.com/concordproject/concord/aggregator"
	"github.com/concordproject/concord/apiextensions"
	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/builtin"
	"github.com/concordproject/concord/clusterproxy"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/componentstatus"
	"github.com/concordproject/concord/flowcontrol"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/kubesemantics"
	"github.com/concordproject/concord/migration"
	"github.com/concordproject/concord/namespace"
	"github.com/concordproject/concord/podbinding"
	"github.com/concordproject/concord/podconnect"
	"github.com/concordproject/concord/podeviction"
	"github.com/concordproject/concord/priorityclass"
	"github.com/concordproject/concord/quota"
	"github.com/concordproject/concord/rbac"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/service"
	"github.com/concordproject/concord/serviceaccount/tokens"
	"github.com/concordproject/concord/storageversion"
	"github.com/concordproject/concord/storageversion/publisher"
	"github.com/concordproject/concord/versionskew"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// features are the server's features, each built once in the resources phase, by
// this file alone (nil where the server does not run it: its resources are not
// served, its gate or flag is off), then read by the serving and controllers phases.
// Each is its package's NewFeature (a feature.Feature), but for the authorizer,
// Kubernetes' semantics, the storage readiness and the mirror at an aggregator.
type features struct {
	authz           *auth.Authorization
	semantics       *kubesemantics.Semantics
	rbac            *rbac.Feature // with the bootstrap roles' (Roles)
	serviceAccounts *tokens.Feature
	identity        *identity.Feature
	storageVersions *storageversion.Feature
	mirror          *publisher.Publisher
	services        *service.Feature
	crds            *apiextensions.Feature
	namespaces      *namespace.Feature
	readiness       *store.Readiness
	migration       *migration.Feature
	flowControl     *flowcontrol.Controller
	aggregator      *aggregator.Feature
	quota           *quota.Feature
	admission       *admission.Feature
	priorityClasses *priorityclass.Feature
	versionSkew     *versionskew.Feature
}

// buildEarly builds what the built-in resources are configured with (authorization,
// service account tokens, the identity lease, Services' allocation, Kubernetes'
// semantics at the server's gates) and returns the resources to register: the
// built-ins configured, and the CRD resource.
func buildEarly(c *core, builtins []*registry.Resource) (*features, []*registry.Resource, error) {
	fs := &features{}
	if err := fs.buildAuth(c); err != nil {
		return nil, nil, err
	}
	var err error
	// Before the Services feature, whose kubernetes Service names the servers their
	// identity leases announce.
	if fs.identity, err = identity.NewFeature(identity.FeatureConfig{Server: c.Server, Endpoint: c.endpoint,
		Options: c.opts.IdentityLease}); err != nil {
		return nil, nil, err
	}
	// The allocation of Services' cluster IPs and node ports, which builtin.Configure
	// gives the services resource (nil when the server does not allocate them).
	if fs.services, err = service.NewFeature(service.FeatureConfig{Server: c.Server, Resources: builtins, Options: c.opts.Services,
		Raw: c.st.raw, Endpoint: c.endpoint, Leases: fs.identity.Leases()}); err != nil {
		return nil, nil, err
	}
	compat := c.Compatibility
	if fs.semantics, err = kubesemantics.ForServer(compat); err != nil {
		return nil, nil, err
	}
	svcs := fs.services.Services()
	builtins, err = builtin.Configure(builtins, builtin.Options{Services: svcs, Semantics: fs.semantics,
		Binder:            podbinding.New(c.Registry, c.Store, fs.semantics),
		ComponentStatuses: componentstatus.New(c.st.client, c.opts.Etcd.Prefix),
		Evictor:           podeviction.New(c.Registry, c.Store),
		Connector:         podconnect.New(c.Registry, c.Store, fs.semantics),
		Proxy:             clusterproxy.New(c.Registry, c.Store, svcs.PrimaryIPFamily()),
		EventTTL:          c.opts.EventTTL, Authorization: fs.authz, Authentication: c.cr.authn, ServiceAccountTokens: fs.serviceAccounts.Tokens(),
		// The aggregator, built later in the resources phase (before any request),
		// says which groups' StorageVersions an aggregated server's user may write.
		StorageVersions: storageversion.APIOptions{Publishers: func(user string) []string { return fs.aggregator.PublisherGroups(user) },
			Unmaintained: !compat.Enabled(compatibility.StorageVersionAPI)},
	})
	if err != nil {
		return nil, nil, err
	}
	return fs, append(builtins, apiextensions.Resource(apiextensions.WithCELCompatibilityVersion(compat.Versions.MinCompatibility))), nil
}

// buildAuth builds the authorizer of --authorization-mode (with RBAC: RBAC's feature,
// whose informers read the object store once started, and the bootstrap roles'; without
// it, neither) and service account tokens, whose authenticator joins the server's.
func (fs *features) buildAuth(c *core) (err error) {
	if fs.rbac, err = rbac.NewFeature(c.Server, c.opts.Auth.AuthorizationModes); err != nil {
		return err
	}
	if fs.authz, err = auth.NewAuthorization(c.opts.Auth.AuthorizationModes, fs.rbac.Authorizer()); err != nil {
		return err
	}
	fs.serviceAccounts, err = tokens.NewFeature(tokens.FeatureConfig{Server: c.Server, SigningKey: c.cr.cluster.ServiceAccountKey,
		Options: c.opts.ServiceAccounts})
	if err != nil {
		return err
	}
	c.cr.authn.Tokens = append(c.cr.authn.Tokens, fs.serviceAccounts.Authenticator())
	return nil
}

// buildLate builds, once the registry holds the built-in resources, the features
// that read it: the storage versions, the CRD and namespace controllers, the watch
// caches' readiness, storage migration, API priority and fairness, the aggregator,
// admission (with quotas), the system priority classes and version skew.
func (fs *features) buildLate(ctx context.Context, c *core) (err error) {
	if err := fs.buildStorageVersions(c); err != nil {
		return err
	}
	if fs.crds, err = apiextensions.NewFeature(apiextensions.FeatureConfig{Server: c.Server, StorageVersions: fs.storageVersions.Manager()}); err != nil {
		return err
	}
	if fs.namespaces, err = namespace.NewFeature(c.Server); err != nil {
		return err
	}
	fs.readiness = store.NewReadiness(c.Store)
	if fs.migration, err = migration.NewFeature(migration.FeatureConfig{Disabled: c.opts.DisableStorageMigration,
		Loopback: c.LoopbackConfig(), Metrics: c.Metrics, ServerID: c.ServerID}); err != nil {
		return err
	}
	if fs.flowControl, err = flowcontrol.NewFeature(c.Server, c.opts.FlowControl); err != nil {
		return err
	}
	if fs.aggregator, err = aggregator.NewFeature(aggregator.FeatureConfig{Server: c.Server, Cluster: c.cr.cluster,
		IdentityLeases: fs.identity.Leases()}); err != nil {
		return err
	}
	if err := fs.buildAdmission(c); err != nil {
		return err
	}
	if fs.priorityClasses, err = priorityclass.NewFeature(c.Server); err != nil {
		return err
	}
	fs.versionSkew, err = versionskew.NewFeature(c.Server, klog.FromContext(ctx))
	return err
}

// buildStorageVersions builds, over the identity lease, the storage version manager
// (StorageVersionAPI) with its mirror at the aggregator this server runs behind, and
// their collector, unless their gates are off.
func (fs *features) buildStorageVersions(c *core) (err error) {
	var mirror func(context.Context, schema.GroupResource, storageversion.Entry) error
	if fs.identity != nil && c.Compatibility.Enabled(compatibility.StorageVersionAPI) {
		if fs.mirror, mirror, err = newMirror(c); err != nil {
			return err
		}
	}
	fs.storageVersions, err = storageversion.NewFeature(storageversion.FeatureConfig{Server: c.Server, Identity: fs.identity,
		Manager: storageversion.Config{Started: c.started, EncryptionKeys: c.cr.encryption.Keys, Mirror: mirror}})
	return err
}

// newMirror builds the publisher of this server's StorageVersion entries to the
// aggregator it runs behind (nil without --aggregator-kubeconfig) and returns it with
// the storage version manager's Mirror, which feeds it the entries of the resources of
// --aggregated-groups, before the server writes in them. The composition root joins
// the two: package storageversion (layer 4) may not import the publisher (layer 5).
func newMirror(c *core) (*publisher.Publisher, func(context.Context, schema.GroupResource, storageversion.Entry) error, error) {
	o, compat := c.opts, c.Compatibility
	p, err := o.Mirror.NewPublisher(publisher.Config{ServerID: c.ServerID, Versions: compat.Versions.Component(),
		LeaseDuration: o.IdentityLease.LeaseDuration, RenewInterval: o.IdentityLease.RenewInterval, Metrics: c.ReconcileMetrics},
		func(rc *rest.Config) { compatibility.IdentifyClient(rc, compat.ClientVersion()) })
	if err != nil || p == nil {
		return nil, nil, err
	}
	return p, o.Mirror.Mirror(p), nil
}

// buildAdmission builds the admission chain: RBAC's escalation check,
// kube-apiserver's own plugins of built-in resources, the admission policies and
// webhooks whose APIs are served (webhooks' Services resolved by the aggregator, if
// the server is one), then ResourceQuota admission if quotas are served.
func (fs *features) buildAdmission(c *core) (err error) {
	if fs.quota, err = quota.NewFeature(c.Server, c.opts.Quota); err != nil {
		return err
	}
	chain := admission.Config{Authorizer: fs.authz, Builtin: fs.semantics.Admission, FeatureGate: fs.semantics.FeatureGate(),
		ServiceResolver: fs.aggregator.ServiceResolver()}
	if fs.quota != nil {
		chain.Validating = append(chain.Validating, fs.quota.Admission())
	}
	if fs.rbac != nil {
		// Kubernetes checks escalation in RBAC's storage, before any validating admission.
		chain.ValidatingFirst = append(chain.ValidatingFirst, fs.rbac.EscalationCheck(fs.authz))
	}
	fs.admission, err = admission.NewFeature(admission.FeatureConfig{Server: c.Server, Chain: chain})
	return err
}
