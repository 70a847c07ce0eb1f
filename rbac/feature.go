package rbac

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/rbac/bootstrap"
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

// Feature is RBAC as one server runs it: typed in-process informers of the roles and
// bindings (read from the object store), the authorizer over them, and the escalation
// check of the admission chain. The server builds it only when --authorization-mode
// names RBAC; without it, it runs no informer of them. The default roles and bindings
// are package bootstrap's Feature, which it builds (Roles).
type Feature struct {
	registry     *registry.Registry
	shared       *informers.Shared
	informers    []cache.SharedIndexInformer
	clusterRoles cache.SharedIndexInformer
	authorizer   *Authorizer
	roles        *bootstrap.Feature
}

// NewFeature builds it when modes (--authorization-mode) name RBAC, and nil, nil
// otherwise: the informers of the server's shared informers (started by Start), the
// authorizer reading their caches, and the bootstrap roles' Feature. The server's
// registry may be filled after NewFeature: Start checks that it serves the four
// resources in v1.
func NewFeature(srv feature.Server, modes []string) (*Feature, error) {
	if !slices.Contains(modes, auth.ModeRBAC) {
		return nil, nil
	}
	f := &Feature{registry: srv.Registry, shared: srv.Informers}
	typed := func(gr schema.GroupResource, newObj func() runtime.Object) cache.SharedIndexInformer {
		inf := srv.Informers.Typed(gr, newObj)
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
	var err error
	f.roles, err = bootstrap.NewFeature(bootstrap.FeatureConfig{Loopback: srv.LoopbackConfig(), ClusterRoles: f.clusterRoles,
		Election: srv.Election})
	return f, err
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
// --authorization-mode's place of RBAC; nil on a nil Feature (a server without RBAC).
func (f *Feature) Authorizer() auth.RuleAuthorizer {
	if f == nil {
		return nil
	}
	return f.authorizer
}

// Roles returns the bootstrap roles' Feature (package bootstrap), which the server
// starts apart from RBAC's informers; nil on a nil Feature.
func (f *Feature) Roles() *bootstrap.Feature {
	if f == nil {
		return nil
	}
	return f.roles
}

// EscalationCheck returns the escalation and bind check of the admission chain, which
// runs it before any other validating admission, as Kubernetes checks escalation in
// RBAC's storage. authz is the server's whole authorizer: it is built from Authorizer,
// so it is given here rather than to NewFeature.
func (f *Feature) EscalationCheck(authz authorizer.UnconditionalAuthorizer) admission.ValidationInterface {
	return NewEscalationCheck(authz, f.authorizer)
}

// ClusterRoles returns the informer of ClusterRoles the authorizer reads, for the
// ClusterRole aggregation controller (package bootstrap), which reads them too; Start
// starts it.
func (f *Feature) ClusterRoles() cache.SharedIndexInformer { return f.clusterRoles }
