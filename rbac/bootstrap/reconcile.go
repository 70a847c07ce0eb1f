package bootstrap

import (
	"context"
	"errors"
	"fmt"

	"github.com/concordproject/concord/retry"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
	"k8s.io/klog/v2"
)

// ErrNotReconciled marks the errors of Ensure: a bootstrap role or binding that could
// not be brought into the API. Each names the object and wraps the cause.
var ErrNotReconciled = errors.New("bootstrap RBAC object not reconciled")

// FieldManager is the field manager of Ensure's writes.
const FieldManager = "concord-rbac-bootstrap"

// ensureBackoff spaces Ensure's passes over the objects that met a race or a server
// not ready yet: the start-up policy of the one retry helper.
var ensureBackoff = retry.StartUp.Backoff

// errPending says that a pass of Ensure left objects to try again.
var errPending = errors.New("bootstrap RBAC objects left to reconcile")

// Ensure brings the bootstrap policy into the cluster client reaches: every missing
// ClusterRole and ClusterRoleBinding is created; one that exists and is not annotated
// autoupdate=false gets the rules, subjects, labels, annotations and aggregation
// selectors it lacks, and keeps everything else (a binding whose roleRef differs is
// deleted and created again, since a roleRef cannot change). Nothing is removed.
//
// Every object is tried, whatever happens to the others. The objects that meet a
// conflict, AlreadyExists, a server error or no server at all are tried again, in
// passes spaced by the start-up policy (package retry), so that servers running
// Ensure at once converge. The error joins one error per object that failed, each
// wrapping ErrNotReconciled and the cause, and naming the object.
func Ensure(ctx context.Context, client kubernetes.Interface) error {
	pending := ensureTasks(client)
	var failed, last []error // for good; in the last pass
	pass := func(ctx context.Context) error {
		var again []ensureTask
		last = nil
		for _, task := range pending {
			err := task.run(ctx)
			if err == nil {
				continue
			}
			err = fmt.Errorf("%w: %s %s: %w", ErrNotReconciled, task.kind, task.name, err)
			if ctx.Err() != nil || !retry.NotRefused(err) {
				failed = append(failed, err)
				continue
			}
			again, last = append(again, task), append(last, err)
		}
		if pending = again; len(pending) == 0 {
			return nil
		}
		klog.FromContext(ctx).V(2).Info("Bootstrap RBAC objects not reconciled yet", "count", len(again), "err", errors.Join(last...))
		return errPending
	}
	// Its own error says only that objects were left, or that ctx ended: both are in
	// failed and last.
	_ = retry.Do(ctx, retry.Policy{Backoff: ensureBackoff, Retriable: func(err error) bool { return errors.Is(err, errPending) }}, pass)
	return errors.Join(append(failed, last...)...)
}

// ensureTask reconciles one bootstrap object.
type ensureTask struct {
	kind, name string
	run        func(ctx context.Context) error
}

// ensureTasks returns the tasks of the bootstrap policy: the roles, then the
// bindings.
func ensureTasks(client kubernetes.Interface) []ensureTask {
	clusterRoleClient, bindings := client.RbacV1().ClusterRoles(), client.RbacV1().ClusterRoleBindings()
	var tasks []ensureTask
	for _, role := range ClusterRoles() {
		tasks = append(tasks, ensureTask{"clusterrole", role.Name, func(ctx context.Context) error {
			return ensureRole(ctx, reconciliation.ClusterRoleRuleOwner{ClusterRole: role.DeepCopy()}, clusterRoles{ctx: ctx, client: clusterRoleClient})
		}})
	}
	for _, role := range Roles() {
		tasks = append(tasks, ensureTask{"role", role.Namespace + "/" + role.Name, func(ctx context.Context) error {
			return ensureRole(ctx, reconciliation.RoleRuleOwner{Role: role.DeepCopy()}, roles{ctx: ctx, client: client.RbacV1()})
		}})
	}
	for _, b := range ClusterRoleBindings() {
		tasks = append(tasks, ensureTask{"clusterrolebinding", b.Name, func(ctx context.Context) error {
			return ensureClusterRoleBinding(ctx, bindings, b.DeepCopy())
		}})
	}
	return tasks
}

// ensureRole reconciles one bootstrap role (a ClusterRole, or a Role of a namespace):
// created if missing, what it lacks added unless it is protected.
func ensureRole(ctx context.Context, want reconciliation.RuleOwner, client reconciliation.RuleOwnerModifier) error {
	opts := reconciliation.ReconcileRoleOptions{
		Role:    want,
		Client:  client,
		Confirm: true,
		// Like Kubernetes: what an administrator added to a bootstrap role stays.
		RemoveExtraPermissions: false,
	}
	result, err := opts.Run()
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("role", want.GetName(), "namespace", want.GetNamespace())
	switch {
	case result.Protected && result.Operation != reconciliation.ReconcileNone:
		logger.Info("Bootstrap role left as it is (autoupdate=false) although it lacks permissions",
			"missingRules", result.MissingRules, "missingSelectors", result.MissingAggregationRuleSelectors)
	case result.Operation == reconciliation.ReconcileCreate:
		logger.V(2).Info("Created bootstrap role")
	case result.Operation == reconciliation.ReconcileUpdate:
		logger.V(2).Info("Updated bootstrap role",
			"missingRules", result.MissingRules, "missingSelectors", result.MissingAggregationRuleSelectors)
	}
	return nil
}

// ensureClusterRoleBinding reconciles one bootstrap ClusterRoleBinding: created if
// missing, the subjects it lacks added unless it is protected.
func ensureClusterRoleBinding(ctx context.Context, client rbacv1client.ClusterRoleBindingInterface, want *rbacv1.ClusterRoleBinding) error {
	opts := reconciliation.ReconcileRoleBindingOptions{
		RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: want},
		Client:      clusterRoleBindings{ctx: ctx, client: client},
		Confirm:     true,
		// Like Kubernetes: subjects an administrator added stay.
		RemoveExtraSubjects: false,
	}
	result, err := opts.Run()
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("clusterrolebinding", want.Name)
	switch {
	case result.Protected && result.Operation != reconciliation.ReconcileNone:
		logger.Info("Bootstrap ClusterRoleBinding left as it is (autoupdate=false) although it lacks subjects",
			"missingSubjects", result.MissingSubjects)
	case result.Operation == reconciliation.ReconcileCreate:
		logger.V(2).Info("Created bootstrap ClusterRoleBinding")
	case result.Operation == reconciliation.ReconcileRecreate:
		logger.V(2).Info("Recreated bootstrap ClusterRoleBinding with its roleRef")
	case result.Operation == reconciliation.ReconcileUpdate:
		logger.V(2).Info("Updated bootstrap ClusterRoleBinding", "missingSubjects", result.MissingSubjects)
	}
	return nil
}

// clusterRoles is the reconciliation library's view of the ClusterRole client, with
// the caller's context (the library's own adapter has none).
type clusterRoles struct {
	ctx    context.Context
	client rbacv1client.ClusterRoleInterface
}

func (c clusterRoles) Get(_, name string) (reconciliation.RuleOwner, error) {
	role, err := c.client.Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: role}, nil
}

func (c clusterRoles) Create(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	role, err := c.client.Create(c.ctx, in.(reconciliation.ClusterRoleRuleOwner).ClusterRole.DeepCopy(),
		metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: role}, nil
}

func (c clusterRoles) Update(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	role, err := c.client.Update(c.ctx, in.(reconciliation.ClusterRoleRuleOwner).ClusterRole,
		metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: role}, nil
}

// clusterRoleBindings is the reconciliation library's view of the
// ClusterRoleBinding client, with the caller's context.
type clusterRoleBindings struct {
	ctx    context.Context
	client rbacv1client.ClusterRoleBindingInterface
}

func (c clusterRoleBindings) Get(_, name string) (reconciliation.RoleBinding, error) {
	b, err := c.client.Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b}, nil
}

func (c clusterRoleBindings) Create(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	b, err := c.client.Create(c.ctx, in.(reconciliation.ClusterRoleBindingAdapter).ClusterRoleBinding.DeepCopy(),
		metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b}, nil
}

func (c clusterRoleBindings) Update(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	b, err := c.client.Update(c.ctx, in.(reconciliation.ClusterRoleBindingAdapter).ClusterRoleBinding,
		metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, err
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b}, nil
}

// Delete deletes the binding if it still has uid (a binding whose roleRef must
// change is deleted and created again).
func (c clusterRoleBindings) Delete(_, name string, uid types.UID) error {
	return c.client.Delete(c.ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
}

// roles is the reconciliation library's view of the Role client, with the caller's
// context.
type roles struct {
	ctx    context.Context
	client rbacv1client.RbacV1Interface
}

func (c roles) Get(namespace, name string) (reconciliation.RuleOwner, error) {
	role, err := c.client.Roles(namespace).Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return reconciliation.RoleRuleOwner{Role: role}, nil
}

func (c roles) Create(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	want := in.(reconciliation.RoleRuleOwner).Role.DeepCopy()
	role, err := c.client.Roles(want.Namespace).Create(c.ctx, want, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, err
	}
	return reconciliation.RoleRuleOwner{Role: role}, nil
}

func (c roles) Update(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	want := in.(reconciliation.RoleRuleOwner).Role
	role, err := c.client.Roles(want.Namespace).Update(c.ctx, want, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, err
	}
	return reconciliation.RoleRuleOwner{Role: role}, nil
}
