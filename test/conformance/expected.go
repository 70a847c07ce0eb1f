package conformance

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// Expectation is what Concord is expected to do with one spec.
type Expectation struct {
	Spec string `json:"spec"`
	// Pass says Concord must pass the spec.
	Pass bool `json:"pass,omitempty"`
	// Short puts a passing spec in the subset that every `go test ./...` runs.
	Short bool `json:"short,omitempty"`
	// Reason names, for a spec Concord is not expected to pass, why: one of Reasons.
	Reason string `json:"reason,omitempty"`
	// Note says more about the reason, in a sentence.
	Note string `json:"note,omitempty"`
}

// Reasons are the reasons a spec may be expected not to pass, and what each means.
var Reasons = map[string]string{
	"pods":       "needs Pods, Nodes, Services, workload or volume resources, or the controllers that act on them: Concord has no kubelet, scheduler or workload controllers and does not serve them (the peer stores them, but they would be resources that do nothing here)",
	"controller": "needs a kube-controller-manager controller that Concord does not run (and the peer has no controller manager)",
	"feature":    "tests a feature that is off by default or alpha, in Kubernetes too",
	"issue-14":   "waits on issue 14, which serves Secrets, ServiceAccounts, RBAC and access reviews",
	"issue-15":   "waits on issue 15, which brings aggregated API servers",
	"issue-16":   "waits on issue 16, which brings admission webhooks and policies and garbage collection",
	"differs":    "Concord differs on purpose; docs/conformance.md says how and why",
	"gap":        "something Concord lacks and has not built yet; docs/conformance.md lists it as open work",
	"skipped":    "the spec skips itself in this release, on every server (Kubernetes' own decision)",
}

// Expectations are the checked-in expectations, by the key of their spec.
type Expectations map[string]Expectation

// labels are the bracketed labels of a spec's name ([Conformance], [Beta], ...), which
// releases move about within the name.
var labels = regexp.MustCompile(`\s*\[[^\]]*\]`)

// key is what identifies a spec across releases: its name without its labels.
func key(spec string) string { return strings.TrimSpace(labels.ReplaceAllString(spec, "")) }

// Of returns the expectation of a spec, and whether there is one.
func (x Expectations) Of(spec string) (Expectation, bool) {
	e, ok := x[key(spec)]
	return e, ok
}

// LoadExpectations reads and checks an expectations file.
func LoadExpectations(path string) (Expectations, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list []Expectation
	if err := yaml.UnmarshalStrict(b, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	exp := make(Expectations, len(list))
	for i, e := range list {
		switch {
		case e.Spec == "":
			return nil, fmt.Errorf("%s: entry %d has no spec", path, i)
		case exp[key(e.Spec)].Spec != "":
			return nil, fmt.Errorf("%s: %q is listed twice (or as %q)", path, e.Spec, exp[key(e.Spec)].Spec)
		case e.Pass && e.Reason != "":
			return nil, fmt.Errorf("%s: %q is expected to pass and has a reason not to", path, e.Spec)
		case !e.Pass && Reasons[e.Reason] == "":
			return nil, fmt.Errorf("%s: %q is not expected to pass; its reason %q is not one of the known reasons", path, e.Spec, e.Reason)
		case e.Short && !e.Pass:
			return nil, fmt.Errorf("%s: %q is in the short subset but not expected to pass", path, e.Spec)
		}
		exp[key(e.Spec)] = e
	}
	return exp, nil
}

// Short returns the specs of all that are in the short subset.
func (x Expectations) Short(all []string) []string {
	var specs []string
	for _, s := range all {
		if e, ok := x.Of(s); ok && e.Short {
			specs = append(specs, s)
		}
	}
	return specs
}

// ShortCount is the number of specs in the short subset.
func (x Expectations) ShortCount() int {
	n := 0
	for _, e := range x {
		if e.Short {
			n++
		}
	}
	return n
}
