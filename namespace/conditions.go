package namespace

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The deletion conditions a terminating namespace carries, in the order they are
// listed. After each pass over its content the controller sets all five, as
// Kubernetes' namespace controller does: True with a reason that names the trouble
// when a pass met it, False with the reason of success otherwise. Users read them
// (kubectl describe namespace) to learn what holds a namespace back.
var deletionConditions = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
	corev1.NamespaceFinalizersRemaining,
}

// cleared is the False variant of each deletion condition: its reason and message,
// the ones Kubernetes' namespace controller writes. The server discovers its
// resources from its own registry, so the first two are always cleared.
var cleared = map[corev1.NamespaceConditionType][2]string{
	corev1.NamespaceDeletionDiscoveryFailure: {"ResourcesDiscovered", "All resources successfully discovered"},
	corev1.NamespaceDeletionGVParsingFailure: {"ParsedGroupVersions", "All legacy kube types successfully parsed"},
	corev1.NamespaceDeletionContentFailure:   {"ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	corev1.NamespaceContentRemaining:         {"ContentRemoved", "All content successfully removed"},
	corev1.NamespaceFinalizersRemaining:      {"ContentHasNoFinalizers", "All content-preserving finalizers finished"},
}

// pass is what one pass over a terminating namespace's content found.
type pass struct {
	// remaining counts, by resource, the objects whose deletion has not completed.
	remaining map[schema.GroupResource]int
	// finalizers counts, by finalizer, the remaining objects it holds.
	finalizers map[string]int
	// failures are the resources whose content could not be deleted, with why.
	failures []error
}

func newPass() *pass {
	return &pass{remaining: map[schema.GroupResource]int{}, finalizers: map[string]int{}}
}

// left counts one object of gr that stays, held by finalizers (none: a graceful
// deletion under way).
func (p *pass) left(gr schema.GroupResource, finalizers []string) {
	p.remaining[gr]++
	for _, f := range finalizers {
		p.finalizers[f]++
	}
}

// contentLeft is how many objects stay.
func (p *pass) contentLeft() int {
	n := 0
	for _, c := range p.remaining {
		n += c
	}
	return n
}

// troubles returns the True conditions of the pass, by type.
func (p *pass) troubles() map[corev1.NamespaceConditionType][2]string {
	out := map[corev1.NamespaceConditionType][2]string{}
	if len(p.failures) > 0 {
		msgs := make([]string, 0, len(p.failures))
		for _, err := range p.failures {
			msgs = append(msgs, err.Error())
		}
		slices.Sort(msgs)
		out[corev1.NamespaceDeletionContentFailure] = [2]string{"ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %s", len(msgs), strings.Join(msgs, ", "))}
	}
	if len(p.remaining) > 0 {
		out[corev1.NamespaceContentRemaining] = [2]string{"SomeResourcesRemain",
			"Some resources are remaining: " + joinSorted(p.remaining, func(gr schema.GroupResource, n int) string {
				return fmt.Sprintf("%s.%s has %d resource instances", gr.Resource, gr.Group, n)
			})}
	}
	if len(p.finalizers) > 0 {
		out[corev1.NamespaceFinalizersRemaining] = [2]string{"SomeFinalizersRemain",
			"Some content in the namespace has finalizers remaining: " + joinSorted(p.finalizers, func(f string, n int) string {
				return fmt.Sprintf("%s in %d resource instances", f, n)
			})}
	}
	return out
}

// joinSorted formats each count with format and joins them, sorted, as Kubernetes'
// messages list them.
func joinSorted[K comparable](counts map[K]int, format func(K, int) string) string {
	parts := make([]string, 0, len(counts))
	for k, n := range counts {
		parts = append(parts, format(k, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// apply sets the deletion conditions of the pass in conds, and reports whether any
// changed. A condition keeps its place and, unless its status changes, its
// lastTransitionTime; a missing one is appended.
func (p *pass) apply(conds []corev1.NamespaceCondition, now metav1.Time) ([]corev1.NamespaceCondition, bool) {
	troubles := p.troubles()
	changed := false
	for _, typ := range deletionConditions {
		status, text := corev1.ConditionFalse, cleared[typ]
		if t, ok := troubles[typ]; ok {
			status, text = corev1.ConditionTrue, t
		}
		i := slices.IndexFunc(conds, func(c corev1.NamespaceCondition) bool { return c.Type == typ })
		if i < 0 {
			conds = append(conds, corev1.NamespaceCondition{Type: typ, Status: status, LastTransitionTime: now, Reason: text[0], Message: text[1]})
			changed = true
			continue
		}
		c := &conds[i]
		if c.Status == status && c.Reason == text[0] && c.Message == text[1] {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = now
		}
		c.Status, c.Reason, c.Message = status, text[0], text[1]
		changed = true
	}
	return conds, changed
}
