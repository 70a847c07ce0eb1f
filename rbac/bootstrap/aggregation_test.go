package bootstrap

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/concordproject/concord/reconcile"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// ruleOn returns a rule granting get on resource.
func ruleOn(resource string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{resource}}
}

// role returns a ClusterRole with labels and rules.
func role(name string, labels map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
}

// aggregator returns a ClusterRole aggregating the roles each of selectors matches.
func aggregator(name string, labels map[string]string, selectors ...map[string]string) *rbacv1.ClusterRole {
	r := role(name, labels)
	r.AggregationRule = &rbacv1.AggregationRule{}
	for _, s := range selectors {
		r.AggregationRule.ClusterRoleSelectors = append(r.AggregationRule.ClusterRoleSelectors, metav1.LabelSelector{MatchLabels: s})
	}
	return r
}

var (
	pick  = map[string]string{"pick": "true"}
	other = map[string]string{"other": "true"}
)

// aggregatorFixture is an Aggregator over a fake clientset, with its informer.
type aggregatorFixture struct {
	client   *fake.Clientset
	agg      *Aggregator
	informer cache.SharedIndexInformer
}

// newAggregatorFixture starts an informer over a fake clientset holding objects,
// stopped when the test ends, and returns an Aggregator over it (not running).
func newAggregatorFixture(t *testing.T, objects ...runtime.Object) *aggregatorFixture {
	t.Helper()
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Rbac().V1().ClusterRoles().Informer()
	agg, err := NewAggregator(client, inf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		factory.Shutdown()
	})
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	return &aggregatorFixture{client: client, agg: agg, informer: inf}
}

// run runs the Aggregator until the returned function is called, which waits for Run
// to return (called at the end of the test at the latest).
func (f *aggregatorFixture) run(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(testContext(t))
	done := make(chan error, 1)
	go func() { done <- f.agg.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop)
	return stop
}

// waitForRules waits until ClusterRole name has rules.
func (f *aggregatorFixture) waitForRules(t *testing.T, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	var got []rbacv1.PolicyRule
	err := wait.PollUntilContextTimeout(t.Context(), 2*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := f.client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = r.Rules
		return equality.Semantic.DeepEqual(got, rules), nil
	})
	if err != nil {
		t.Fatalf("ClusterRole %s has rules %v, want %v: %v", name, got, rules, err)
	}
}

// update changes ClusterRole name with change.
func (f *aggregatorFixture) update(t *testing.T, name string, change func(*rbacv1.ClusterRole)) {
	t.Helper()
	r, err := f.client.RbacV1().ClusterRoles().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	change(r)
	if _, err := f.client.RbacV1().ClusterRoles().Update(t.Context(), r, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// updates counts the updates of ClusterRoles the client has seen.
func (f *aggregatorFixture) updates() int {
	n := 0
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "update" && a.GetResource().Resource == "clusterroles" {
			n++
		}
	}
	return n
}

func TestAggregatorFollowsChanges(t *testing.T) {
	f := newAggregatorFixture(t,
		aggregator("agg", nil, pick),
		role("b", pick, ruleOn("two"), ruleOn("one")),
		role("a", pick, ruleOn("one"), ruleOn("three")),
		role("c", nil, ruleOn("four")),
	)
	f.run(t)
	// By name (a before b), each rule once, in the order first met.
	f.waitForRules(t, "agg", ruleOn("one"), ruleOn("three"), ruleOn("two"))

	f.update(t, "a", func(r *rbacv1.ClusterRole) { r.Rules = append(r.Rules, ruleOn("five")) })
	f.waitForRules(t, "agg", ruleOn("one"), ruleOn("three"), ruleOn("five"), ruleOn("two"))

	f.update(t, "c", func(r *rbacv1.ClusterRole) { r.Labels = pick })
	f.waitForRules(t, "agg", ruleOn("one"), ruleOn("three"), ruleOn("five"), ruleOn("two"), ruleOn("four"))

	f.update(t, "b", func(r *rbacv1.ClusterRole) { r.Labels = nil })
	f.waitForRules(t, "agg", ruleOn("one"), ruleOn("three"), ruleOn("five"), ruleOn("four"))

	if err := f.client.RbacV1().ClusterRoles().Delete(t.Context(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.waitForRules(t, "agg", ruleOn("four"))

	f.update(t, "c", func(r *rbacv1.ClusterRole) { r.Labels = nil })
	f.waitForRules(t, "agg")
}

func TestAggregatorSelectorsInOrder(t *testing.T) {
	f := newAggregatorFixture(t,
		// Itself matched by its first selector: never its own source.
		aggregator("agg", pick, other, pick),
		role("a", pick, ruleOn("a")),
		role("z", other, ruleOn("z"), ruleOn("a")),
		// A role a user wrote by hand into an aggregated role is replaced.
		aggregator("hand-written", nil, other),
	)
	f.update(t, "hand-written", func(r *rbacv1.ClusterRole) { r.Rules = []rbacv1.PolicyRule{ruleOn("by-hand")} })
	f.run(t)
	f.waitForRules(t, "agg", ruleOn("z"), ruleOn("a"))
	f.waitForRules(t, "hand-written", ruleOn("z"), ruleOn("a"))
}

// TestAggregatorBootstrapPolicy runs the aggregator over the bootstrap roles: admin
// covers edit, which covers view, and each covers its aggregate-to role.
func TestAggregatorBootstrapPolicy(t *testing.T) {
	var objects []runtime.Object
	for _, r := range ClusterRoles() {
		objects = append(objects, &r)
	}
	f := newAggregatorFixture(t, objects...)
	f.run(t)
	pairs := []struct{ owner, servant string }{
		{Admin, AggregateToAdmin}, {Admin, AggregateToEdit}, {Admin, AggregateToView},
		{Edit, AggregateToEdit}, {Edit, AggregateToView}, {View, AggregateToView},
	}
	err := wait.PollUntilContextTimeout(t.Context(), 2*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, p := range pairs {
			owner, err := f.client.RbacV1().ClusterRoles().Get(ctx, p.owner, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			servant, err := f.client.RbacV1().ClusterRoles().Get(ctx, p.servant, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if ok, _ := validation.Covers(owner.Rules, servant.Rules); !ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the bootstrap roles were not aggregated: %v", err)
	}
}

// TestAggregatorWritesOnlyChanges reconciles directly: a role whose rules are already
// the aggregate is not written; one that differs is written once.
func TestAggregatorWritesOnlyChanges(t *testing.T) {
	done := aggregator("done", nil, pick)
	done.Rules = []rbacv1.PolicyRule{ruleOn("a")}
	f := newAggregatorFixture(t,
		done,
		aggregator("empty", nil, map[string]string{"nothing": "matches"}),
		aggregator("pending", nil, pick),
		role("a", pick, ruleOn("a")),
		role("plain", nil, ruleOn("x")),
	)
	ctx := testContext(t)
	for _, name := range []string{"done", "empty", "plain", "missing"} {
		if _, err := f.agg.reconcile(ctx, name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if n := f.updates(); n != 0 {
		t.Errorf("%d updates of roles already aggregated, want none: %v", n, f.client.Actions())
	}
	if _, err := f.agg.reconcile(ctx, "pending"); err != nil {
		t.Fatal(err)
	}
	if n := f.updates(); n != 1 {
		t.Errorf("%d updates of a role to aggregate, want 1", n)
	}
}

func TestAggregatorBadSelector(t *testing.T) {
	bad := aggregator("bad", nil)
	bad.AggregationRule.ClusterRoleSelectors = []metav1.LabelSelector{{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Sideways"}},
	}}
	f := newAggregatorFixture(t, bad)
	_, err := f.agg.reconcile(testContext(t), "bad")
	if !errors.Is(err, reconcile.ErrTerminal) || !errors.Is(err, errBadSelector) {
		t.Errorf("error %v, want a terminal errBadSelector", err)
	}
}

// TestAggregatorRunsAgain checks that Run works again after it returned, as in a new
// term of leadership.
func TestAggregatorRunsAgain(t *testing.T) {
	f := newAggregatorFixture(t, aggregator("agg", nil, pick), role("a", pick, ruleOn("a")))
	stop := f.run(t)
	f.waitForRules(t, "agg", ruleOn("a"))
	stop()
	f.update(t, "a", func(r *rbacv1.ClusterRole) { r.Rules = []rbacv1.PolicyRule{ruleOn("b")} })
	f.run(t)
	f.waitForRules(t, "agg", ruleOn("b"))
}

func TestNewAggregatorNeedsItsParts(t *testing.T) {
	client := fake.NewClientset()
	inf := informers.NewSharedInformerFactory(client, 0).Rbac().V1().ClusterRoles().Informer()
	for _, c := range []struct {
		name   string
		client kubernetes.Interface
		inf    cache.SharedIndexInformer
	}{{"no client", nil, inf}, {"no informer", client, nil}} {
		if _, err := NewAggregator(c.client, c.inf); !errors.Is(err, ErrInvalidAggregator) {
			t.Errorf("%s: error %v, want ErrInvalidAggregator", c.name, err)
		}
	}
}
