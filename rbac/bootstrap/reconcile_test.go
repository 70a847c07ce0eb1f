package bootstrap

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-helpers/auth/rbac/validation"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// testContext returns t.Context() with a logger that writes to t.
func testContext(t *testing.T) context.Context {
	return klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2))))
}

// writes counts the write actions client has seen.
func writes(client *fake.Clientset) int {
	n := 0
	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete":
			n++
		}
	}
	return n
}

// autoUpdate returns the annotations of a bootstrap object with autoupdate=v.
func autoUpdate(v string) map[string]string {
	return map[string]string{rbacv1.AutoUpdateAnnotationKey: v}
}

func getRole(t *testing.T, client *fake.Clientset, name string) *rbacv1.ClusterRole {
	t.Helper()
	r, err := client.RbacV1().ClusterRoles().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func getBinding(t *testing.T, client *fake.Clientset, name string) *rbacv1.ClusterRoleBinding {
	t.Helper()
	b, err := client.RbacV1().ClusterRoleBindings().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkPolicy checks that every bootstrap object exists and, unless it is annotated
// autoupdate=false, holds at least what the policy says.
func checkPolicy(t *testing.T, client *fake.Clientset) {
	t.Helper()
	for _, want := range ClusterRoles() {
		got := getRole(t, client, want.Name)
		if got.Annotations[AutoUpdateAnnotation] == "false" {
			continue
		}
		if ok, missing := validation.Covers(got.Rules, want.Rules); !ok {
			t.Errorf("ClusterRole %s lacks %v", want.Name, missing)
		}
		if got.Labels[BootstrappingLabel] != BootstrappingValue || got.Annotations[AutoUpdateAnnotation] != "true" {
			t.Errorf("ClusterRole %s has labels %v, annotations %v", want.Name, got.Labels, got.Annotations)
		}
		if (want.AggregationRule == nil) != (got.AggregationRule == nil) {
			t.Errorf("ClusterRole %s has aggregationRule %v, want %v", want.Name, got.AggregationRule, want.AggregationRule)
		}
	}
	for _, want := range ClusterRoleBindings() {
		got := getBinding(t, client, want.Name)
		if got.Annotations[AutoUpdateAnnotation] == "false" {
			continue
		}
		if got.RoleRef != want.RoleRef {
			t.Errorf("ClusterRoleBinding %s refers to %v, want %v", want.Name, got.RoleRef, want.RoleRef)
		}
		for _, s := range want.Subjects {
			if !containsSubject(got.Subjects, s) {
				t.Errorf("ClusterRoleBinding %s lacks subject %v", want.Name, s)
			}
		}
	}
}

func containsSubject(list []rbacv1.Subject, s rbacv1.Subject) bool {
	for _, have := range list {
		if have == s {
			return true
		}
	}
	return false
}

var (
	extraRule     = rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
	basicUserRule = rbacv1.PolicyRule{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews"}}
	alice         = rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}
)

func TestEnsure(t *testing.T) {
	cases := []struct {
		name     string
		existing []runtime.Object
		check    func(t *testing.T, client *fake.Clientset)
	}{
		{name: "empty cluster"},
		{
			name: "adds a missing permission",
			existing: []runtime.Object{&rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: BasicUser, Annotations: autoUpdate("true")},
				Rules:      []rbacv1.PolicyRule{basicUserRule},
			}},
			check: func(t *testing.T, client *fake.Clientset) {
				// checkPolicy checks that the missing ones were added.
				if got := getRole(t, client, BasicUser); !equality.Semantic.DeepEqual(got.Rules[0], basicUserRule) {
					t.Errorf("rules %v, want %v kept first", got.Rules, basicUserRule)
				}
			},
		},
		{
			name: "leaves autoupdate=false alone",
			existing: []runtime.Object{
				&rbacv1.ClusterRole{
					ObjectMeta: metav1.ObjectMeta{Name: BasicUser, Annotations: autoUpdate("false")},
					Rules:      []rbacv1.PolicyRule{basicUserRule},
				},
				&rbacv1.ClusterRoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: PublicInfoViewer, Annotations: autoUpdate("false")},
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: PublicInfoViewer},
					Subjects:   groups(AuthenticatedGroup),
				},
			},
			check: func(t *testing.T, client *fake.Clientset) {
				role := getRole(t, client, BasicUser)
				if !equality.Semantic.DeepEqual(role.Rules, []rbacv1.PolicyRule{basicUserRule}) || role.Labels != nil {
					t.Errorf("protected ClusterRole changed: %v, labels %v", role.Rules, role.Labels)
				}
				b := getBinding(t, client, PublicInfoViewer)
				if !equality.Semantic.DeepEqual(b.Subjects, groups(AuthenticatedGroup)) {
					t.Errorf("protected ClusterRoleBinding changed: %v", b.Subjects)
				}
			},
		},
		{
			name: "keeps what an administrator added",
			existing: []runtime.Object{
				&rbacv1.ClusterRole{
					ObjectMeta: metav1.ObjectMeta{Name: View, Labels: map[string]string{"team": "a"}},
					AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
						{MatchLabels: map[string]string{"example.com/aggregate-to-view": "true"}},
					}},
				},
				&rbacv1.ClusterRole{
					ObjectMeta: metav1.ObjectMeta{Name: Discovery, Annotations: autoUpdate("true")},
					Rules:      []rbacv1.PolicyRule{extraRule},
				},
				&rbacv1.ClusterRoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: BasicUser},
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: BasicUser},
					Subjects:   []rbacv1.Subject{alice},
				},
			},
			check: func(t *testing.T, client *fake.Clientset) {
				view := getRole(t, client, View)
				if len(view.AggregationRule.ClusterRoleSelectors) != 2 || view.Labels["team"] != "a" {
					t.Errorf("view: selectors %v, labels %v; want both selectors and the added label",
						view.AggregationRule.ClusterRoleSelectors, view.Labels)
				}
				if ok, _ := validation.Covers(getRole(t, client, Discovery).Rules, []rbacv1.PolicyRule{extraRule}); !ok {
					t.Error("the permission added to system:discovery was removed")
				}
				if !containsSubject(getBinding(t, client, BasicUser).Subjects, alice) {
					t.Error("the subject added to system:basic-user was removed")
				}
			},
		},
		{
			name: "recreates a binding whose roleRef changed",
			existing: []runtime.Object{&rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: ClusterAdmin, UID: "old"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: View},
				Subjects:   []rbacv1.Subject{alice},
			}},
			check: func(t *testing.T, client *fake.Clientset) {
				if b := getBinding(t, client, ClusterAdmin); containsSubject(b.Subjects, alice) {
					t.Errorf("subjects %v kept across the change of roleRef", b.Subjects)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			client := fake.NewClientset(c.existing...)
			if err := Ensure(testContext(t), client); err != nil {
				t.Fatal(err)
			}
			checkPolicy(t, client)
			if c.check != nil {
				c.check(t, client)
			}
			client.ClearActions()
			if err := Ensure(testContext(t), client); err != nil {
				t.Fatal(err)
			}
			if n := writes(client); n != 0 {
				t.Errorf("second Ensure wrote %d times, want none: %v", n, client.Actions())
			}
		})
	}
}

// fastRetries makes Ensure's retries quick for the test.
func fastRetries(t *testing.T) {
	saved := ensureBackoff
	ensureBackoff = wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 4}
	t.Cleanup(func() { ensureBackoff = saved })
}

func TestEnsureRetriesRaces(t *testing.T) {
	fastRetries(t)
	stale := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: Monitoring}}
	client := fake.NewClientset(stale)
	// Another server updates system:monitoring first: our first update conflicts.
	var conflicted atomic.Bool
	client.PrependReactor("update", "clusterroles", func(clienttesting.Action) (bool, runtime.Object, error) {
		if conflicted.CompareAndSwap(false, true) {
			return true, nil, apierrors.NewConflict(rbacv1.Resource("clusterroles"), Monitoring, errors.New("changed"))
		}
		return false, nil, nil
	})
	// Another server creates every binding between our read and our create, with no
	// subjects: we see AlreadyExists, and then have to add them.
	client.PrependReactor("create", "clusterrolebindings", func(a clienttesting.Action) (bool, runtime.Object, error) {
		b := a.(clienttesting.CreateAction).GetObject().(*rbacv1.ClusterRoleBinding).DeepCopy()
		if _, err := client.Tracker().Get(rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"), "", b.Name); err == nil {
			return false, nil, nil
		}
		b.Subjects = nil
		if err := client.Tracker().Add(b); err != nil {
			return true, nil, err
		}
		return true, nil, apierrors.NewAlreadyExists(rbacv1.Resource("clusterrolebindings"), b.Name)
	})
	if err := Ensure(testContext(t), client); err != nil {
		t.Fatal(err)
	}
	if !conflicted.Load() {
		t.Error("no conflict was met")
	}
	checkPolicy(t, client)
}

func TestEnsureConcurrently(t *testing.T) {
	client := fake.NewClientset()
	var wg sync.WaitGroup
	ctx := testContext(t)
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = Ensure(ctx, client) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	checkPolicy(t, client)
	roles, err := client.RbacV1().ClusterRoles().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(roles.Items) != len(ClusterRoles()) {
		t.Errorf("%d ClusterRoles, want %d", len(roles.Items), len(ClusterRoles()))
	}
}

func TestEnsureErrors(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		attempts int // how often the failing create is tried
	}{
		{"refused", apierrors.NewForbidden(rbacv1.Resource("clusterrolebindings"), Monitoring, errors.New("no")), 1},
		{"unavailable", apierrors.NewServiceUnavailable("not ready"), 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fastRetries(t)
			client := fake.NewClientset()
			var attempts atomic.Int32
			client.PrependReactor("create", "clusterrolebindings", func(a clienttesting.Action) (bool, runtime.Object, error) {
				if a.(clienttesting.CreateAction).GetObject().(*rbacv1.ClusterRoleBinding).Name != Monitoring {
					return false, nil, nil
				}
				attempts.Add(1)
				return true, nil, c.err
			})
			err := Ensure(testContext(t), client)
			if !errors.Is(err, ErrNotReconciled) || !strings.Contains(err.Error(), "clusterrolebinding "+Monitoring) {
				t.Fatalf("error %v, want ErrNotReconciled naming clusterrolebinding %s", err, Monitoring)
			}
			if apierrors.ReasonForError(err) != apierrors.ReasonForError(c.err) {
				t.Errorf("error %v does not wrap %v", err, c.err)
			}
			if got := attempts.Load(); int(got) != c.attempts {
				t.Errorf("tried %d times, want %d", got, c.attempts)
			}
			// Everything else was still brought in.
			if _, err := client.RbacV1().ClusterRoleBindings().Get(t.Context(), ClusterAdmin, metav1.GetOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
}
