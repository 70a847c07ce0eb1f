package schema

import (
	"slices"
	"strings"
	"testing"
)

// TestRulesEvaluateWithEveryLibrary checks that rules are evaluated in the
// StoredExpressions environment: every versioned library of k8s.io/apiserver's base
// environment works, up to the newest (lists' includes, Kubernetes 1.37), whatever the
// compatibility version. Which rules a definition may gain is the CRD validation's
// business (package apiextensions).
func TestRulesEvaluateWithEveryLibrary(t *testing.T) {
	s, err := Compile(t.Context(), parseProps(t, `
type: object
properties:
  spec:
    type: object
    properties:
      size: {type: integer}
      quantity: {type: string}
      address: {type: string}
      version: {type: string}
      name: {type: string}
      tags: {type: array, items: {type: string}}
      labels: {type: object, additionalProperties: {type: string}}
    x-kubernetes-validations:
    - rule: "[1, 2, 3].includes(self.size)"                         # 1.37 lists
      message: includes
    - rule: "self.tags.distinct() == self.tags"                      # 1.34 ext lists
      message: distinct
    - rule: "self.labels.all(k, v, k != v)"                          # 1.32 two-variable comprehensions
      message: comprehension
    - rule: "isSemver(self.version)"                                 # 1.33 semver
      message: semver
    - rule: "!format.dns1123Label().validate(self.name).hasValue()"  # 1.31 format
      message: format
    - rule: "isIP(self.address)"                                     # 1.30 ip
      message: ip
    - rule: "sets.contains(['a', 'b', 'c'], self.tags)"              # 1.29 sets
      message: sets
    - rule: "quantity(self.quantity).isGreaterThan(quantity('1'))"   # 1.28 quantity
      message: quantity
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	valid := `
apiVersion: example.com/v1
kind: Widget
spec: {size: 2, quantity: 2Gi, address: 10.0.0.1, version: 1.2.3, name: widget, tags: [a, b], labels: {a: b}}
`
	if errs := s.Validate(t.Context(), parseObject(t, valid)); len(errs) != 0 {
		t.Fatalf("valid object: %v", errs)
	}
	invalid := `
apiVersion: example.com/v1
kind: Widget
spec: {size: 5, quantity: 100m, address: nowhere, version: v1, name: Widget_, tags: [d, d], labels: {a: a}}
`
	got := errorStrings(s.Validate(t.Context(), parseObject(t, invalid)))
	for _, msg := range []string{"includes", "distinct", "comprehension", "semver", "format", "ip", "sets", "quantity"} {
		if !slices.Contains(got, "spec: Invalid value: "+msg) {
			t.Errorf("rule %s did not refuse the invalid object; errors:\n%s", msg, strings.Join(got, "\n"))
		}
	}
}
