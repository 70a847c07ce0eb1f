package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/concordproject/concord/reconcile"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	rbacv1listers "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// AggregatorName names the aggregation controller in logs and metrics; it is also the
// field manager of its writes, Kubernetes' name for them.
const AggregatorName = "clusterrole-aggregation-controller"

// aggregatorWorkers is how many ClusterRoles are aggregated at once
// (kube-controller-manager's).
const aggregatorWorkers = 5

// ErrInvalidAggregator is returned by NewAggregator when it lacks its client or
// informer.
var ErrInvalidAggregator = errors.New("aggregator needs a client and a ClusterRole informer")

// errBadSelector marks an aggregationRule whose selector cannot be read: retrying
// does not help, a change of the role queues it again.
var errBadSelector = errors.New("invalid clusterRoleSelector")

// Aggregator keeps the rules of every ClusterRole that has an aggregationRule: they
// are the union of the rules of the other ClusterRoles any of its
// clusterRoleSelectors matches, taken selector by selector, the matching roles in the
// order of their names, each rule once, in the order first met (Kubernetes'
// clusterrole-aggregation controller, and its order). A role is written, with an
// Update preconditioned on the resourceVersion read, only when its rules differ.
//
// Any change to any ClusterRole queues every aggregating ClusterRole, as Kubernetes
// does: the roles are few, and whether a change matters depends on labels before and
// after it. Several aggregators writing at once are safe (a conflict is retried), but
// it is meant to run elected.
type Aggregator struct {
	client   rbacv1client.ClusterRolesGetter
	informer cache.SharedIndexInformer
	lister   rbacv1listers.ClusterRoleLister
}

// NewAggregator returns an aggregator that reads ClusterRoles from informer (an
// informer of typed *rbacv1.ClusterRole objects, such as client-go's shared informer
// factory's) and writes them through client. The informer is started by its owner.
func NewAggregator(client kubernetes.Interface, informer cache.SharedIndexInformer) (*Aggregator, error) {
	if client == nil || informer == nil {
		return nil, ErrInvalidAggregator
	}
	return &Aggregator{
		client:   client.RbacV1(),
		informer: informer,
		lister:   rbacv1listers.NewClusterRoleLister(informer.GetIndexer()),
	}, nil
}

// Run aggregates until ctx is done, and returns once its workers have stopped. It
// waits until the informer, started by its owner, has delivered its initial list.
// Run may be called again once it has returned (a new term of leadership): each call
// follows the informer anew, with a queue of its own.
func (a *Aggregator) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("clusterrole-aggregation"))
	ctrl := reconcile.New(AggregatorName, reconcile.Func[string](a.reconcile),
		reconcile.Options[string]{Workers: aggregatorWorkers})
	reg, err := a.informer.AddEventHandler(reconcile.HandlerOf(ctrl, a.aggregators))
	if err != nil {
		return fmt.Errorf("following ClusterRoles: %w", err)
	}
	defer func() { _ = a.informer.RemoveEventHandler(reg) }()
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return nil
	}
	return ctrl.Run(ctx)
}

// aggregators is the keys function of the informer's events: whatever ClusterRole
// changed, every aggregating ClusterRole.
func (a *Aggregator) aggregators(*rbacv1.ClusterRole) []string {
	roles, err := a.lister.List(labels.Everything())
	if err != nil {
		return nil // a lister fails only on a bad selector
	}
	var names []string
	for _, r := range roles {
		if r.AggregationRule != nil {
			names = append(names, r.Name)
		}
	}
	return names
}

// reconcile writes the aggregated rules of ClusterRole name, if they differ from its
// rules.
func (a *Aggregator) reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	role, err := a.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if role.AggregationRule == nil {
		return reconcile.Result{}, nil
	}
	rules, err := aggregate(role, a.lister.List)
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	// Semantic equality: no rules at all is the same whether nil or empty.
	if equality.Semantic.DeepEqual(rules, role.Rules) {
		return reconcile.Result{}, nil
	}
	next := role.DeepCopy()
	next.Rules = rules
	_, err = a.client.ClusterRoles().Update(ctx, next, metav1.UpdateOptions{FieldManager: AggregatorName})
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	klog.FromContext(ctx).V(2).Info("Aggregated ClusterRole", "clusterrole", name, "rules", len(rules))
	return reconcile.Result{}, nil
}

// aggregate returns the rules aggregator aggregates from the ClusterRoles list
// returns: for each of its selectors in turn, the roles it matches but aggregator
// itself, by name, their rules each added once, in order.
func aggregate(aggregator *rbacv1.ClusterRole, list func(labels.Selector) ([]*rbacv1.ClusterRole, error)) ([]rbacv1.PolicyRule, error) {
	var rules []rbacv1.PolicyRule
	for i := range aggregator.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&aggregator.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, fmt.Errorf("%w in ClusterRole %s: %w", errBadSelector, aggregator.Name, err)
		}
		roles, err := list(selector)
		if err != nil {
			return nil, err
		}
		roles = slices.Clone(roles)
		slices.SortFunc(roles, func(x, y *rbacv1.ClusterRole) int { return strings.Compare(x.Name, y.Name) })
		for _, r := range roles {
			if r.Name == aggregator.Name {
				continue
			}
			for _, rule := range r.Rules {
				if !slices.ContainsFunc(rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, rule) }) {
					rules = append(rules, *rule.DeepCopy())
				}
			}
		}
	}
	return rules, nil
}
