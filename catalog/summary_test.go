package catalog

import (
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

// The summary read without the API groups is the parsed catalog's.
func TestDefaultSummaryIsDefaults(t *testing.T) {
	s, err := DefaultSummary()
	if err != nil {
		t.Fatal(err)
	}
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	want := c.Summary()
	if !slices.EqualFunc(s.Releases, want.Releases, func(a, b *version.Version) bool { return a.EqualTo(b) }) {
		t.Errorf("releases %v, want %v", s.Releases, want.Releases)
	}
	if !slices.Equal(s.FeatureGates, want.FeatureGates) || len(s.FeatureGates) == 0 {
		t.Errorf("feature gates %v, want %v", s.FeatureGates, want.FeatureGates)
	}
	if got, want := s.BinaryVersion().String(), c.BinaryVersion().String(); got != want {
		t.Errorf("binary version %s, want %s", got, want)
	}
}

func TestWithoutMember(t *testing.T) {
	doc := "{\n  \"a\": [\n    \"x\"\n  ],\n  \"groups\": [\n    {\n      \"groups\": 1\n    }\n  ],\n  \"b\": {}\n}\n"
	got, err := withoutMember([]byte(doc), "groups")
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"a\": [\n    \"x\"\n  ],\n  \"b\": {}\n}\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for _, tc := range []struct{ doc, name string }{
		{doc, "nope"},
		{"{\n  \"a\": 1,\n  \"groups\": 2\n}\n", "groups"},       // the last member: its comma would stay
		{"{\n  \"a\": {\n    \"groups\": 2\n  }\n}\n", "groups"}, // only nested
	} {
		if _, err := withoutMember([]byte(tc.doc), tc.name); !errors.Is(err, errNoMember) {
			t.Errorf("withoutMember(%q, %q): %v, want errNoMember", tc.doc, tc.name, err)
		}
	}
}
