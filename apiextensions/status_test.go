package apiextensions

import (
	"slices"
	"testing"
	"time"

	"github.com/concordproject/concord/registry"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// defn returns a definition of group example.com with the given names, created at the
// given second.
func defn(plural, kind string, created int, short ...string) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".example.com", CreationTimestamp: metav1.Unix(int64(created), 0)},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Names: apiextensionsv1.CustomResourceDefinitionNames{
			Plural: plural, Singular: plural[:len(plural)-1], Kind: kind, ListKind: kind + "List", ShortNames: short,
		}},
	}
	return crd
}

// accepted marks crd as having all its requested names accepted.
func accepted(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	crd.Status.AcceptedNames = crd.Spec.Names
	apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue})
	apihelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue})
	return crd
}

func TestAcceptNames(t *testing.T) {
	builtin := &registry.Resource{Group: "example.com", Names: apiextensionsv1.CustomResourceDefinitionNames{
		Plural: "pods", Singular: "pod", Kind: "Pod", ListKind: "PodList", ShortNames: []string{"po"}}}
	for _, tc := range []struct {
		name       string
		crd        *apiextensionsv1.CustomResourceDefinition
		others     []*apiextensionsv1.CustomResourceDefinition
		wantReason string
		wantKind   string
	}{
		{"no conflict", defn("widgets", "Widget", 1, "wd"), []*apiextensionsv1.CustomResourceDefinition{accepted(defn("gadgets", "Gadget", 0, "gd"))},
			reasonNoConflicts, "Widget"},
		{"kind of an accepted definition", defn("widgets", "Gadget", 1), []*apiextensionsv1.CustomResourceDefinition{accepted(defn("gadgets", "Gadget", 0))},
			reasonKindConflict, ""},
		{"list kind", defn("widgets", "Widget", 1), []*apiextensionsv1.CustomResourceDefinition{accepted(defn("gadgets", "WidgetList", 0))},
			reasonListKindConflict, ""},
		{"short name against a plural", defn("widgets", "Widget", 1, "gadgets"), []*apiextensionsv1.CustomResourceDefinition{accepted(defn("gadgets", "Gadget", 0))},
			reasonShortNamesConflict, "Widget"},
		{"plural against a short name", defn("widgets", "Widget", 1), []*apiextensionsv1.CustomResourceDefinition{accepted(defn("gadgets", "Gadget", 0, "widgets"))},
			reasonPluralConflict, "Widget"},
		{"built-in kind", defn("widgets", "Pod", 1), nil, reasonKindConflict, ""},
		{"built-in short name", defn("widgets", "Widget", 1, "po"), nil, reasonShortNamesConflict, "Widget"},
		{"other group", func() *apiextensionsv1.CustomResourceDefinition {
			d := defn("widgets", "Pod", 1)
			d.Spec.Group = "other.example.com"
			return d
		}(), nil, reasonNoConflicts, "Pod"},
		{"older undecided definition wins", defn("widgets", "Gadget", 1), []*apiextensionsv1.CustomResourceDefinition{defn("gadgets", "Gadget", 0)},
			reasonKindConflict, ""},
		{"same second: the name decides", defn("widgets", "Gadget", 0), []*apiextensionsv1.CustomResourceDefinition{defn("gadgets", "Gadget", 0)},
			reasonKindConflict, ""},
		{"younger undecided definition loses", defn("gadgets", "Gadget", 0), []*apiextensionsv1.CustomResourceDefinition{defn("widgets", "Gadget", 1)},
			reasonNoConflicts, "Gadget"},
		{"a held name is kept", accepted(defn("widgets", "Gadget", 5)), []*apiextensionsv1.CustomResourceDefinition{defn("gadgets", "Gadget", 0)},
			reasonNoConflicts, "Gadget"},
		{"held twice: the older keeps it", accepted(defn("gadgets", "Gadget", 0)), []*apiextensionsv1.CustomResourceDefinition{accepted(defn("widgets", "Gadget", 0))},
			reasonNoConflicts, "Gadget"},
		{"held twice: the younger loses it", accepted(defn("widgets", "Gadget", 0)), []*apiextensionsv1.CustomResourceDefinition{accepted(defn("gadgets", "Gadget", 0))},
			reasonKindConflict, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			group := append([]*apiextensionsv1.CustomResourceDefinition{tc.crd}, tc.others...)
			names, cond := acceptNames(tc.crd, claims(tc.crd, group, []*registry.Resource{builtin}))
			if cond.Reason != tc.wantReason {
				t.Errorf("reason = %s (%s), want %s", cond.Reason, cond.Message, tc.wantReason)
			}
			if (cond.Status == apiextensionsv1.ConditionTrue) != (tc.wantReason == reasonNoConflicts) {
				t.Errorf("status = %s for reason %s", cond.Status, cond.Reason)
			}
			if names.Kind != tc.wantKind {
				t.Errorf("accepted kind = %q, want %q", names.Kind, tc.wantKind)
			}
			if names.Plural != tc.crd.Spec.Names.Plural && tc.wantReason != reasonPluralConflict {
				t.Errorf("accepted plural = %q", names.Plural)
			}
		})
	}
}

func TestDesiredStatus(t *testing.T) {
	none := claimedNames{firm: newNameSet(), other: newNameSet()}
	crd := defn("widgets", "Widget", 0, "wd")
	crd.Spec.Names.Categories = []string{"all"}

	got := desiredStatus(crd, none)
	if !apihelpers.IsCRDConditionTrue(got, apiextensionsv1.Established) || !apihelpers.IsCRDConditionTrue(got, apiextensionsv1.NamesAccepted) {
		t.Fatalf("conditions = %+v", got.Status.Conditions)
	}
	if !slices.Equal(got.Status.AcceptedNames.Categories, []string{"all"}) || !statusChanged(crd, got) {
		t.Fatalf("accepted names = %+v", got.Status.AcceptedNames)
	}
	// Computing again from the result changes nothing, even later: no ping-pong.
	time.Sleep(10 * time.Millisecond)
	if again := desiredStatus(got, none); statusChanged(got, again) || again.Status.Conditions[0].LastTransitionTime != got.Status.Conditions[0].LastTransitionTime {
		t.Fatalf("second computation changed the status: %+v", again.Status)
	}

	// A later conflict keeps the definition established under its old names.
	changed := got.DeepCopy()
	changed.Spec.Names.Kind, changed.Spec.Names.ListKind = "Gadget", "GadgetList"
	taken := claimedNames{firm: newNameSet(), other: nameSet{resources: sets.New[string](), kinds: sets.New("Gadget")}}
	after := desiredStatus(changed, taken)
	if !apihelpers.IsCRDConditionTrue(after, apiextensionsv1.Established) || !apihelpers.IsCRDConditionFalse(after, apiextensionsv1.NamesAccepted) ||
		after.Status.AcceptedNames.Kind != "Widget" {
		t.Fatalf("after a conflicting rename: %+v", after.Status)
	}

	// Losing a held kind to an older definition (both were accepted at once by servers
	// with lagging views) ends the establishment.
	firm := claimedNames{firm: nameSet{resources: sets.New[string](), kinds: sets.New("Widget")}, other: newNameSet()}
	if lost := desiredStatus(got, firm); apihelpers.IsCRDConditionTrue(lost, apiextensionsv1.Established) || lost.Status.AcceptedNames.Kind != "" {
		t.Fatalf("after losing the kind: %+v", lost.Status)
	}

	// Deletion sets Terminating.
	deleting := got.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	if d := desiredStatus(deleting, none); !isTerminating(d, reasonDeletionPending) {
		t.Fatalf("terminating = %+v", d.Status.Conditions)
	}
}
