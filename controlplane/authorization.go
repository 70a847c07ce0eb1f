package controlplane

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/rbac"
	"github.com/concordproject/concord/rbac/bootstrap"
	"github.com/concordproject/concord/reconcile"
	"github.com/google/uuid"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
)

// errRBACNotSynced: the RBAC informers have not read the roles and bindings yet.
var errRBACNotSynced = errors.New("the roles and bindings have not been read yet")

// rbacBootstrapHook is the post-start hook of the bootstrap roles, named as
// kube-apiserver's.
const rbacBootstrapHook = "rbac/bootstrap-roles"

// aggregationLease is the lease of the ClusterRole aggregation controller's election.
const aggregationLease = "concord-clusterrole-aggregation"

// rbacParts are RBAC's parts of a server: in-process informers of the roles and
// bindings (typed, read from the object store), the authorizer over them, and the
// escalation check of the admission chain.
type rbacParts struct {
	informers    []cache.SharedIndexInformer
	clusterRoles cache.SharedIndexInformer
	authorizer   *rbac.Authorizer
}

// newAuthorization builds the server's authorizer from --authorization-mode. With RBAC,
// its informers read the object store (started by startRBAC once the registry is
// filled).
func (i *Instance) newAuthorization() (*auth.Authorization, error) {
	modes := i.opts.Auth.AuthorizationModes
	if !slices.Contains(modes, auth.ModeRBAC) {
		return auth.NewAuthorization(modes, nil)
	}
	typed := func(gr schema.GroupResource, newObj func() runtime.Object) cache.SharedIndexInformer {
		inf := i.parts.informers.Typed(gr, newObj)
		i.parts.rbac.informers = append(i.parts.rbac.informers, inf)
		return inf
	}
	roles := typed(rbac.RolesGR, func() runtime.Object { return &rbacv1.Role{} })
	roleBindings := typed(rbac.RoleBindingsGR, func() runtime.Object { return &rbacv1.RoleBinding{} })
	clusterRoles := typed(rbac.ClusterRolesGR, func() runtime.Object { return &rbacv1.ClusterRole{} })
	clusterRoleBindings := typed(rbac.ClusterRoleBindingsGR, func() runtime.Object { return &rbacv1.ClusterRoleBinding{} })
	i.parts.rbac.clusterRoles = clusterRoles
	i.parts.rbac.authorizer = rbac.NewAuthorizer(rbac.Listers{
		Roles:               rbaclisters.NewRoleLister(roles.GetIndexer()),
		RoleBindings:        rbaclisters.NewRoleBindingLister(roleBindings.GetIndexer()),
		ClusterRoles:        rbaclisters.NewClusterRoleLister(clusterRoles.GetIndexer()),
		ClusterRoleBindings: rbaclisters.NewClusterRoleBindingLister(clusterRoleBindings.GetIndexer()),
	})
	return auth.NewAuthorization(modes, i.parts.rbac.authorizer)
}

// startRBAC starts the RBAC informers; ready once they have read every role and
// binding, so that the server decides with them from its first request.
func (i *Instance) startRBAC(ctx context.Context) error {
	infs := i.parts.rbac.informers
	if len(infs) == 0 {
		return nil
	}
	for _, gr := range []schema.GroupResource{rbac.RolesGR, rbac.RoleBindingsGR, rbac.ClusterRolesGR, rbac.ClusterRoleBindingsGR} {
		if i.Registry.Served(gr, "v1") == nil {
			return fmt.Errorf("--authorization-mode=%s needs %s served in v1 (see --runtime-config)", auth.ModeRBAC, gr)
		}
	}
	return i.parts.informers.Start(ctx, &i.components, "rbac-informers", errRBACNotSynced, infs...)
}

// bootstrapRBAC creates the default roles and bindings (and adds what a newer
// release gives those still marked for automatic update), then starts the ClusterRole
// aggregation controller, leader-elected among the servers.
func (i *Instance) bootstrapRBAC(ctx context.Context) error {
	if i.parts.rbac.authorizer == nil {
		return nil
	}
	cfg := i.LoopbackConfig()
	cfg.QPS = -1 // the loopback identity is exempt from priority and fairness, and from client-side limits
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := bootstrap.Ensure(ctx, client); err != nil {
		return fmt.Errorf("creating the bootstrap roles: %w", err)
	}
	i.finish(rbacBootstrapHook)
	run := reconcile.Elected(client.CoordinationV1(), aggregationLease, i.ServerID+"_"+uuid.NewString(), func(ctx context.Context) error {
		agg, err := bootstrap.NewAggregator(client, i.parts.rbac.clusterRoles)
		if err != nil {
			return err
		}
		return agg.Run(ctx)
	})
	return i.start(ctx, lifecycle.Component{Name: "clusterrole-aggregation", Run: run})
}
