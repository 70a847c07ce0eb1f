package controlplane

import (
	"context"
	"reflect"
	"slices"

	"github.com/concordproject/concord/admission"
	"github.com/concordproject/concord/aggregator"
	"github.com/concordproject/concord/apiextensions"
	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/builtin"
	"github.com/concordproject/concord/clusterproxy"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/componentstatus"
	"github.com/concordproject/concord/flowcontrol"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/kubesemantics"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/migration"
	"github.com/concordproject/concord/namespace"
	"github.com/concordproject/concord/podbinding"
	"github.com/concordproject/concord/podconnect"
	"github.com/concordproject/concord/podeviction"
	"github.com/concordproject/concord/priorityclass"
	"github.com/concordproject/concord/quota"
	"github.com/concordproject/concord/rbac"
	"github.com/concordproject/concord/rbac/bootstrap"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/service"
	"github.com/concordproject/concord/serviceaccount/tokens"
	"github.com/concordproject/concord/storageversion"
	"github.com/concordproject/concord/storageversion/publisher"
	"github.com/concordproject/concord/versionskew"
)

// feature is one feature as the composition root handles it: its checks are on
// /healthz, /livez and /readyz from the serving phase on, and Start starts its
// components in the controllers phase (each feature package's Feature; the order is
// controllers.go's).
type feature interface {
	Checks() []health.Checker
	Start(ctx context.Context, g *lifecycle.Group) error
}

// present returns those of fs that the server has: a feature the server does not
// run is a nil pointer.
func present(fs ...feature) []feature {
	return slices.DeleteFunc(fs, func(f feature) bool {
		v := reflect.ValueOf(f)
		return !v.IsValid() || (v.Kind() == reflect.Pointer || v.Kind() == reflect.Func) && v.IsNil()
	})
}

// features are the server's features, each built once in the resources phase (nil
// where the server does not run it: its resources are not served, its gate or flag is
// off), then read by the serving and controllers phases.
type features struct {
	authz           *auth.Authorization
	semantics       *kubesemantics.Semantics
	rbac            *rbac.Feature
	roles           *bootstrap.Feature
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
func buildEarly(c *core, cr *credentials, builtins []*registry.Resource) (*features, []*registry.Resource, error) {
	fs := &features{}
	if err := fs.buildAuth(c, cr); err != nil {
		return nil, nil, err
	}
	var err error
	// Before the Services feature, whose kubernetes Service names the servers their
	// identity leases announce.
	if fs.identity, err = identity.NewFeature(identity.FeatureConfig{Registry: c.registry, Store: c.store, Informers: c.informers,
		Compatibility: c.compat, ServerID: c.id, Endpoint: c.endpoint, Options: c.opts.IdentityLease}); err != nil {
		return nil, nil, err
	}
	// The allocation of Services' cluster IPs and node ports, which builtin.Configure
	// gives the services resource (nil when the server does not allocate them).
	if fs.services, err = service.NewFeature(service.FeatureConfig{Resources: builtins, Options: c.opts.Services, Raw: c.raw,
		Informers: c.informers, Loopback: c.loopbackConfig(), Endpoint: c.endpoint, Leases: fs.identity.Leases(),
		ServerID: c.id, ReconcileMetrics: c.runtime}); err != nil {
		return nil, nil, err
	}
	gates, err := kubesemantics.NewGates(c.compat.Versions.Emulation, c.compat.Versions.MinCompatibility, c.compat.FeatureGate())
	if err != nil {
		return nil, nil, err
	}
	fs.semantics = kubesemantics.New(gates)
	svcs := fs.services.Services()
	builtins, err = builtin.Configure(builtins, builtin.Options{Services: svcs, Semantics: fs.semantics,
		Binder:            podbinding.New(c.registry, c.store, fs.semantics),
		ComponentStatuses: componentstatus.New(c.client, c.opts.Etcd.Prefix),
		Evictor:           podeviction.New(c.registry, c.store),
		Connector:         podconnect.New(c.registry, c.store, fs.semantics),
		Proxy:             clusterproxy.New(c.registry, c.store, svcs.PrimaryIPFamily()),
		EventTTL:          c.opts.EventTTL, Authorization: fs.authz, Authentication: cr.authn, ServiceAccountTokens: fs.serviceAccounts.Tokens(),
		StorageVersions: storageversion.APIOptions{Publishers: fs.publisherGroups,
			Unmaintained: !c.compat.Enabled(compatibility.StorageVersionAPI)},
	})
	if err != nil {
		return nil, nil, err
	}
	return fs, append(builtins, apiextensions.Resource(apiextensions.WithCELCompatibilityVersion(c.compat.Versions.MinCompatibility))), nil
}

// buildAuth builds the authorizer of --authorization-mode (with RBAC: RBAC's feature,
// whose informers read the object store once started, and the bootstrap roles'; without
// it, neither) and service account tokens, whose authenticator joins the server's.
func (fs *features) buildAuth(c *core, cr *credentials) error {
	var rbacAuthorizer *rbac.Authorizer
	if slices.Contains(c.opts.Auth.AuthorizationModes, auth.ModeRBAC) {
		var err error
		if fs.rbac, err = rbac.NewFeature(rbac.FeatureConfig{Registry: c.registry, Informers: c.informers}); err != nil {
			return err
		}
		rbacAuthorizer = fs.rbac.Authorizer()
		cfg := bootstrap.FeatureConfig{Loopback: c.loopbackConfig(), ClusterRoles: fs.rbac.ClusterRoles(), ServerID: c.id}
		if fs.roles, err = bootstrap.NewFeature(cfg); err != nil {
			return err
		}
	}
	var err error
	if fs.authz, err = auth.NewAuthorization(c.opts.Auth.AuthorizationModes, rbacAuthorizer); err != nil {
		return err
	}
	sa := c.opts.ServiceAccounts
	fs.serviceAccounts, err = tokens.NewFeature(tokens.FeatureConfig{Registry: c.registry, Store: c.store, Informers: c.informers,
		SigningKey: cr.cluster.ServiceAccountKey, Issuer: sa.Issuer, APIAudiences: sa.Audiences(), MaxExpiration: sa.MaxTokenExpiration})
	if err != nil {
		return err
	}
	cr.authn.Tokens = append(cr.authn.Tokens, fs.serviceAccounts.Authenticator())
	return nil
}

// publisherGroups are the groups whose StorageVersions an aggregated server's user
// may write: none but through the aggregator (built later in the resources phase,
// before any request).
func (fs *features) publisherGroups(user string) []string {
	if fs.aggregator == nil {
		return nil
	}
	return fs.aggregator.PublisherGroups(user)
}
