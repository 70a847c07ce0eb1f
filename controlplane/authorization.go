package controlplane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/rbac"
	"github.com/concordproject/concord/rbac/bootstrap"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry/store"
	"github.com/google/uuid"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
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
	modes := i.opts.AuthorizationModes
	if !slices.Contains(modes, auth.ModeRBAC) {
		return auth.NewAuthorization(modes, nil)
	}
	typed := func(gr schema.GroupResource, newObj func() runtime.Object) cache.SharedIndexInformer {
		inf := i.typedInformer(gr, newObj)
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
	return i.startInformers(ctx, "rbac-informers", errRBACNotSynced, infs...)
}

// startInformers starts, as one component, those of infs no component has started
// yet (shared informers are started once), and returns once they have all synced.
// The informer-sync check counts them.
func (i *Instance) startInformers(ctx context.Context, name string, notSynced error, infs ...cache.SharedIndexInformer) error {
	fresh := i.parts.shared.add(name, infs)
	if len(fresh) == 0 {
		return nil
	}
	return i.start(ctx, informersComponent(name, notSynced, fresh...))
}

// sharedInformers are the in-process informers the server answers requests from
// (RBAC's, service accounts', the aggregator's, the Service allocator's...), started
// once each, by the component named with them.
type sharedInformers struct {
	mu      sync.Mutex
	started map[cache.SharedIndexInformer]string
}

// add records those of infs not started yet, under component name, and returns them.
func (s *sharedInformers) add(name string, infs []cache.SharedIndexInformer) []cache.SharedIndexInformer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started == nil {
		s.started = map[cache.SharedIndexInformer]string{}
	}
	var fresh []cache.SharedIndexInformer
	for _, inf := range infs {
		if _, ok := s.started[inf]; !ok {
			s.started[inf] = name
			fresh = append(fresh, inf)
		}
	}
	return fresh
}

// errInformersNotSynced: a shared informer has not delivered its initial list.
var errInformersNotSynced = errors.New("informers not synced")

// synced returns nil when every started informer has synced, else which components'
// have not.
func (s *sharedInformers) synced() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pending []string
	for inf, name := range s.started {
		if !inf.HasSynced() && !slices.Contains(pending, name) {
			pending = append(pending, name)
		}
	}
	if len(pending) > 0 {
		slices.Sort(pending)
		return fmt.Errorf("%w: %s", errInformersNotSynced, strings.Join(pending, ", "))
	}
	return nil
}

// informersComponent runs in-process informers until stopped; it is ready once they
// have all synced, else notSynced says what is missing.
func informersComponent(name string, notSynced error, infs ...cache.SharedIndexInformer) lifecycle.Component {
	return lifecycle.Component{Name: name,
		Run: func(ctx context.Context) error {
			reconcile.StartInformers(ctx, infs...)()
			return nil
		},
		Ready: func() error {
			for _, inf := range infs {
				if !inf.HasSynced() {
					return notSynced
				}
			}
			return nil
		},
	}
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
	election := reconcile.LeaseElection(client.CoordinationV1(), aggregationLease, i.ServerID+"_"+uuid.NewString())
	return i.start(ctx, lifecycle.Component{Name: "clusterrole-aggregation", Run: func(ctx context.Context) error {
		return reconcile.RunElected(ctx, election, func(ctx context.Context) {
			agg, err := bootstrap.NewAggregator(client, i.parts.rbac.clusterRoles)
			if err == nil {
				err = agg.Run(ctx)
			}
			if err != nil && ctx.Err() == nil {
				klog.FromContext(ctx).Error(err, "The ClusterRole aggregation controller stopped")
			}
		})
	}})
}

// typedInformer returns the in-process informer of resource gr in v1, read from the
// object store, whose objects are typed (newObj's type) and indexed by namespace: one
// per resource, shared by the components that read it (start it with
// startInformers).
func (i *Instance) typedInformer(gr schema.GroupResource, newObj func() runtime.Object) cache.SharedIndexInformer {
	if inf, ok := i.parts.typed[gr]; ok {
		return inf
	}
	inf := i.Store.NewInformer(store.Source{Registry: i.Registry, Resource: gr, Version: "v1"},
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if i.parts.typed == nil {
		i.parts.typed = map[schema.GroupResource]cache.SharedIndexInformer{}
	}
	i.parts.typed[gr] = inf
	_ = inf.SetTransform(func(obj interface{}) (interface{}, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		out := newObj()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
			return nil, fmt.Errorf("reading %s %s: %w", gr, u.GetName(), err)
		}
		return out, nil
	})
	return inf
}
