package apiextensions

import (
	"fmt"
	"slices"

	"github.com/concordproject/concord/registry"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Condition reasons and messages, as Kubernetes reports them.
const (
	reasonNoConflicts          = "NoConflicts"
	reasonPluralConflict       = "PluralConflict"
	reasonSingularConflict     = "SingularConflict"
	reasonShortNamesConflict   = "ShortNamesConflict"
	reasonKindConflict         = "KindConflict"
	reasonListKindConflict     = "ListKindConflict"
	reasonInitialNamesAccepted = "InitialNamesAccepted"
	reasonNotAccepted          = "NotAccepted"

	reasonDeletionPending    = "InstanceDeletionPending"
	messageDeletionPending   = "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"
	reasonDeletionInProgress = "InstanceDeletionInProgress"
	reasonDeletionFailed     = "InstanceDeletionFailed"
	reasonDeletionCheck      = "InstanceDeletionCheck"
)

// nameSet holds names of a group: resource names (plurals, singulars and short names,
// which kubectl resolves alike) and kinds (kinds and list kinds).
type nameSet struct {
	resources, kinds sets.Set[string]
}

func newNameSet() nameSet { return nameSet{resources: sets.New[string](), kinds: sets.New[string]()} }

func (c nameSet) add(n apiextensionsv1.CustomResourceDefinitionNames) {
	for _, r := range append([]string{n.Plural, n.Singular}, n.ShortNames...) {
		if r != "" {
			c.resources.Insert(r)
		}
	}
	for _, k := range []string{n.Kind, n.ListKind} {
		if k != "" {
			c.kinds.Insert(k)
		}
	}
}

// claimedNames are the names others hold in a definition's group. Firm claims win
// even over a name the definition already holds: they are the built-in resources'
// names and those accepted by older definitions (two servers deciding at once from
// views that lag each other may both accept a name; the older definition keeps it).
// Other claims only keep the definition from taking a name it does not hold yet.
type claimedNames struct {
	firm, other nameSet
}

// claims returns the names crd competes for in its group. A definition is older than
// another if it was created earlier, or in the same second with a smaller name: every
// server orders them alike. Besides accepted names, those requested by older
// definitions not decided yet (no NamesAccepted condition) are claimed, so that
// definitions created together are decided in age order.
func claims(crd *apiextensionsv1.CustomResourceDefinition, group []*apiextensionsv1.CustomResourceDefinition, builtins []*registry.Resource) claimedNames {
	c := claimedNames{firm: newNameSet(), other: newNameSet()}
	for _, res := range builtins {
		if res.Group == crd.Spec.Group && res.Owner == nil {
			c.firm.add(res.Names)
		}
	}
	for _, other := range group {
		if other.Name == crd.Name || other.Spec.Group != crd.Spec.Group {
			continue
		}
		if !older(other, crd) {
			c.other.add(other.Status.AcceptedNames)
			continue
		}
		c.firm.add(other.Status.AcceptedNames)
		if apihelpers.FindCRDCondition(other, apiextensionsv1.NamesAccepted) == nil {
			c.other.add(other.Spec.Names)
		}
	}
	return c
}

func older(a, b *apiextensionsv1.CustomResourceDefinition) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// acceptNames decides which of crd's requested names it may have: a requested name it
// already holds is kept unless firmly claimed, one it does not hold is taken if no one
// claims it. A requested name that cannot be had keeps the previously accepted value,
// or none if that one is firmly claimed; the last such name (in the order plural,
// singular, short names, kind, list kind) is reported in the returned NamesAccepted
// condition. Categories are always accepted.
func acceptNames(crd *apiextensionsv1.CustomResourceDefinition, c claimedNames) (apiextensionsv1.CustomResourceDefinitionNames, apiextensionsv1.CustomResourceDefinitionCondition) {
	want, have := crd.Spec.Names, crd.Status.AcceptedNames
	cond := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue,
		Reason: reasonNoConflicts, Message: "no conflicts found",
	}
	conflict := func(reason, name string) { // the last conflict is reported, as in Kubernetes
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, fmt.Sprintf("%q is already in use", name)
	}
	// free reports whether the definition may have name, holding held.
	free := func(firm, other sets.Set[string], name, held string) bool {
		return !firm.Has(name) && (name == held || !other.Has(name))
	}
	// keep returns what is left of a held name when the wanted one cannot be had.
	keep := func(firm sets.Set[string], held string) string {
		if firm.Has(held) {
			return ""
		}
		return held
	}
	res, kinds := [2]sets.Set[string]{c.firm.resources, c.other.resources}, [2]sets.Set[string]{c.firm.kinds, c.other.kinds}

	out := apiextensionsv1.CustomResourceDefinitionNames{Categories: slices.Clone(want.Categories)}
	for _, f := range []struct {
		reason       string
		out          *string
		wanted, held string
	}{
		{reasonPluralConflict, &out.Plural, want.Plural, have.Plural},
		{reasonSingularConflict, &out.Singular, want.Singular, have.Singular},
	} {
		if free(res[0], res[1], f.wanted, f.held) {
			*f.out = f.wanted
		} else {
			conflict(f.reason, f.wanted)
			*f.out = keep(res[0], f.held)
		}
	}
	out.ShortNames = slices.Clone(want.ShortNames)
	for _, s := range want.ShortNames {
		held := ""
		if slices.Contains(have.ShortNames, s) {
			held = s
		}
		if !free(res[0], res[1], s, held) {
			conflict(reasonShortNamesConflict, s)
			out.ShortNames = slices.DeleteFunc(slices.Clone(have.ShortNames), res[0].Has)
			break
		}
	}
	// Kind and list kind go together: a client needs both to list what it gets.
	switch {
	case !free(kinds[0], kinds[1], want.Kind, have.Kind):
		conflict(reasonKindConflict, want.Kind)
	case !free(kinds[0], kinds[1], want.ListKind, have.ListKind):
		conflict(reasonListKindConflict, want.ListKind)
	default:
		out.Kind, out.ListKind = want.Kind, want.ListKind
	}
	if out.Kind == "" && keep(kinds[0], have.Kind) != "" && keep(kinds[0], have.ListKind) != "" {
		out.Kind, out.ListKind = have.Kind, have.ListKind
	}
	return out, cond
}

// servable reports whether accepted names are enough to serve a resource.
func servable(n apiextensionsv1.CustomResourceDefinitionNames) bool {
	return n.Plural != "" && n.Kind != "" && n.ListKind != ""
}

// desiredStatus returns crd's status with the names and conditions the controller
// maintains brought up to date: acceptedNames, NamesAccepted, Established (True from
// the first time all names are accepted, as long as a plural and kinds are held) and, for a definition being deleted,
// Terminating (kept as the cleanup left it, or set to pending). Conditions whose
// status does not change keep their lastTransitionTime; storedVersions are the
// store's and are left alone.
func desiredStatus(crd *apiextensionsv1.CustomResourceDefinition, c claimedNames) *apiextensionsv1.CustomResourceDefinition {
	out := crd.DeepCopy()
	names, namesCond := acceptNames(crd, c)
	out.Status.AcceptedNames = names
	apihelpers.SetCRDCondition(out, namesCond)
	switch {
	case !servable(names):
		apihelpers.SetCRDCondition(out, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
			Reason: reasonNotAccepted, Message: "not all names are accepted",
		})
	case apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established):
	case namesCond.Status == apiextensionsv1.ConditionTrue:
		apihelpers.SetCRDCondition(out, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue,
			Reason: reasonInitialNamesAccepted, Message: "the initial names have been accepted",
		})
	default:
		apihelpers.SetCRDCondition(out, apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
			Reason: reasonNotAccepted, Message: "not all names are accepted",
		})
	}
	if crd.DeletionTimestamp != nil && !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Terminating) {
		apihelpers.SetCRDCondition(out, terminatingCondition(reasonDeletionPending, messageDeletionPending))
	}
	return out
}

func terminatingCondition(reason, msg string) apiextensionsv1.CustomResourceDefinitionCondition {
	return apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: reason, Message: msg,
	}
}

// statusChanged reports whether a and b differ in status other than condition times.
func statusChanged(a, b *apiextensionsv1.CustomResourceDefinition) bool {
	if !apiequality.Semantic.DeepEqual(a.Status.AcceptedNames, b.Status.AcceptedNames) ||
		!slices.Equal(a.Status.StoredVersions, b.Status.StoredVersions) ||
		len(a.Status.Conditions) != len(b.Status.Conditions) {
		return true
	}
	for i := range a.Status.Conditions {
		if !apihelpers.IsCRDConditionEquivalent(&a.Status.Conditions[i], &b.Status.Conditions[i]) {
			return true
		}
	}
	return false
}
