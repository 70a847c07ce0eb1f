package namespace

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A pass sets the five deletion conditions in order; a later pass changes only what
// it found different, and moves lastTransitionTime only where the status changed.
func TestPassConditions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	held := newPass()
	held.left(schema.GroupResource{Resource: "configmaps"}, []string{"example.com/a"})
	held.left(schema.GroupResource{Group: "apps", Resource: "deployments"}, []string{"example.com/b", "example.com/a"})
	held.failures = []error{errors.New("listing b: gone"), errors.New("listing a: gone")}
	conds, changed := held.apply([]corev1.NamespaceCondition{{Type: "Other", Status: corev1.ConditionTrue}}, t0)
	if !changed || len(conds) != 6 || conds[0].Type != "Other" {
		t.Fatalf("first pass: changed %v, %+v", changed, conds)
	}
	want := []string{
		"NamespaceDeletionDiscoveryFailure False ResourcesDiscovered All resources successfully discovered",
		"NamespaceDeletionGroupVersionParsingFailure False ParsedGroupVersions All legacy kube types successfully parsed",
		"NamespaceDeletionContentFailure True ContentDeletionFailed Failed to delete all resource types, 2 remaining: listing a: gone, listing b: gone",
		"NamespaceContentRemaining True SomeResourcesRemain Some resources are remaining: configmaps. has 1 resource instances, deployments.apps has 1 resource instances",
		"NamespaceFinalizersRemaining True SomeFinalizersRemain Some content in the namespace has finalizers remaining: example.com/a in 2 resource instances, example.com/b in 1 resource instances",
	}
	for i, w := range want {
		c := conds[i+1]
		if got := string(c.Type) + " " + string(c.Status) + " " + c.Reason + " " + c.Message; got != w || !c.LastTransitionTime.Equal(&t0) {
			t.Errorf("condition %d: %q at %v, want %q", i, got, c.LastTransitionTime, w)
		}
	}
	if _, changed := held.apply(conds, t1); changed {
		t.Error("the same pass again changed the conditions")
	}
	emptied := newPass()
	conds, changed = emptied.apply(conds, t1)
	if !changed {
		t.Fatal("an empty pass after a held one changed nothing")
	}
	for _, c := range conds[1:] {
		if c.Status != corev1.ConditionFalse || c.Reason != cleared[c.Type][0] {
			t.Errorf("%s after an empty pass: %s %s", c.Type, c.Status, c.Reason)
		}
		moved := c.Type != corev1.NamespaceDeletionDiscoveryFailure && c.Type != corev1.NamespaceDeletionGVParsingFailure
		if c.LastTransitionTime.Equal(&t1) != moved {
			t.Errorf("%s: lastTransitionTime %v; want it moved only where the status changed", c.Type, c.LastTransitionTime)
		}
	}
}
