package rbac

import (
	"context"
	"errors"
	"fmt"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/registry"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
)

// errNotSynced: the RBAC informers have not read the roles and bindings yet.
var errNotSynced = errors.New("the roles and bindings have not been read yet")

// FeatureConfig is what RBAC needs of the server: the registry that serves the four
// resources, and the shared in-process informers the authorizer reads them through.
type FeatureConfig struct {
	// Registry is the server's registry. It may be filled after NewFeature: Start
	// checks that it serves the four resources in v1.
	Registry *registry.Registry
	// Informers are the server's shared informers, of the object store behind Registry.
	Informers *informers.Shared
}

// Feature is RBAC as one server runs it: typed in-process informers of the roles and
// bindings (read from the object store), the authorizer over them, and the escalation
// check of the admission chain. The server builds it only when --authorization-mode
// names RBAC; without it, it runs no informer of them. The default roles and bindings
// are package bootstrap's Feature.
type Feature struct {
	registry     *registry.Registry
	shared       *informers.Shared
	informers    []cache.SharedIndexInformer
	clusterRoles cache.SharedIndexInformer
	authorizer   *Authorizer
}

// NewFeature builds it: the informers (started by Start) and the authorizer reading
// their caches. It never returns nil.
func NewFeature(cfg FeatureConfig) (*Feature, error) {
	f := &Feature{registry: cfg.Registry, shared: cfg.Informers}
	typed := func(gr schema.GroupResource, newObj func() runtime.Object) cache.SharedIndexInformer {
		inf := cfg.Informers.Typed(gr, newObj)
		f.informers = append(f.informers, inf)
		return inf
	}
	roles := typed(RolesGR, func() runtime.Object { return &rbacv1.Role{} })
	roleBindings := typed(RoleBindingsGR, func() runtime.Object { return &rbacv1.RoleBinding{} })
	f.clusterRoles = typed(ClusterRolesGR, func() runtime.Object { return &rbacv1.ClusterRole{} })
	clusterRoleBindings := typed(ClusterRoleBindingsGR, func() runtime.Object { return &rbacv1.ClusterRoleBinding{} })
	f.authorizer = NewAuthorizer(Listers{
		Roles:               rbaclisters.NewRoleLister(roles.GetIndexer()),
		RoleBindings:        rbaclisters.NewRoleBindingLister(roleBindings.GetIndexer()),
		ClusterRoles:        rbaclisters.NewClusterRoleLister(f.clusterRoles.GetIndexer()),
		ClusterRoleBindings: rbaclisters.NewClusterRoleBindingLister(clusterRoleBindings.GetIndexer()),
	})
	return f, nil
}

// Checks returns none: RBAC has no post-start hook of its own (its informers count in
// the server's informer-sync check; the bootstrap roles' hook is package bootstrap's).
func (f *Feature) Checks() []health.Checker { return nil }

// Start starts the informers of the roles and bindings as the component
// rbac-informers; ready once they have read every role and binding, so that the
// server decides with them from its first request. It fails if the registry does not
// serve the four resources in v1.
func (f *Feature) Start(ctx context.Context, g *lifecycle.Group) error {
	for _, gr := range []schema.GroupResource{RolesGR, RoleBindingsGR, ClusterRolesGR, ClusterRoleBindingsGR} {
		if f.registry.Served(gr, "v1") == nil {
			return fmt.Errorf("--authorization-mode=%s needs %s served in v1 (see --runtime-config)", auth.ModeRBAC, gr)
		}
	}
	return f.shared.Start(ctx, g, "rbac-informers", errNotSynced, f.informers...)
}

// Authorizer returns the RBAC authorizer, which the server's authorization chains at
// --authorization-mode's place of RBAC.
func (f *Feature) Authorizer() *Authorizer { return f.authorizer }

// EscalationCheck returns the escalation and bind check of the admission chain, which
// runs it before any other validating admission, as Kubernetes checks escalation in
// RBAC's storage. authz is the server's whole authorizer: it is built from Authorizer,
// so it is given here rather than in FeatureConfig.
func (f *Feature) EscalationCheck(authz authorizer.UnconditionalAuthorizer) admission.ValidationInterface {
	return NewEscalationCheck(authz, f.authorizer)
}

// ClusterRoles returns the informer of ClusterRoles the authorizer reads, for the
// ClusterRole aggregation controller (package bootstrap), which reads them too; Start
// starts it.
func (f *Feature) ClusterRoles() cache.SharedIndexInformer { return f.clusterRoles }
