package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
	sigsjson "sigs.k8s.io/json"
)

// Summary is what a catalog says besides its API groups: its releases and the names of
// its feature gates. It is what flag help and a client's announced release need.
type Summary struct {
	// Releases are oldest first; the last one is the binary version.
	Releases []*version.Version
	// FeatureGates are the gates' names, sorted.
	FeatureGates []string
}

// BinaryVersion returns the newest release: the version of the binary whose APIs the
// catalog describes.
func (s Summary) BinaryVersion() *version.Version {
	return s.Releases[len(s.Releases)-1]
}

// Summary returns the catalog's releases and feature gate names.
func (c *Catalog) Summary() Summary {
	return newSummary(c.Releases(), c.gates)
}

// newSummary is the Summary of releases and gates, as a catalog holds them.
func newSummary(releases []*version.Version, gates map[featuregate.Feature]featuregate.VersionedSpecs) Summary {
	names := make([]string, 0, len(gates))
	for name := range gates {
		names = append(names, string(name))
	}
	slices.Sort(names)
	return Summary{Releases: releases, FeatureGates: names}
}

// DefaultSummary returns the Summary of the catalog embedded in the binary without
// decoding its API groups, nearly all of its bytes and of the time Default takes:
// every process of the binary builds every command's flags, whose help gives the
// releases and gates, and most processes (a client command, `concord etcd`, a refused
// flag) need nothing more of the catalog. It equals Default's Summary
// (TestDefaultSummaryIsDefaults).
func DefaultSummary() (Summary, error) {
	return parseDefaultSummary()
}

var parseDefaultSummary = sync.OnceValues(func() (Summary, error) { return summaryOf(defaultJSON) })

// summaryOf reads the Summary of data, a catalog as Encode writes it.
func summaryOf(data []byte) (Summary, error) {
	doc, err := withoutMember(data, "groups")
	if err != nil {
		return Summary{}, err
	}
	var f fileCatalog
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(doc, &f); err != nil {
		return Summary{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	m := &modelBuilder{}
	releases := m.releases(f.Releases)
	gates := m.gates(f.FeatureGates)
	if len(m.errs) > 0 {
		return Summary{}, fmt.Errorf("%w: %w", ErrInvalid, m.errs.ToAggregate())
	}
	if len(releases) == 0 {
		return Summary{}, fmt.Errorf("%w: no releases", ErrInvalid)
	}
	return newSummary(releases, gates), nil
}

// errNoMember is returned by withoutMember for a document it cannot cut.
var errNoMember = errors.New("the default catalog's member is not where Encode writes it")

// withoutMember returns data, a JSON object as Encode writes it (indented by two
// spaces, one member per line at the top level), without its member name, which must
// not be the last one. A line that starts with exactly two spaces and a quote is a
// top-level member: deeper lines are indented further, and JSON strings hold no raw
// newline.
func withoutMember(data []byte, name string) ([]byte, error) {
	start := bytes.Index(data, []byte("\n  \""+name+"\": "))
	if start < 0 {
		return nil, fmt.Errorf("%w: %q", errNoMember, name)
	}
	next := bytes.Index(data[start+1:], []byte("\n  \""))
	if next < 0 {
		return nil, fmt.Errorf("%w: %q is the last member", errNoMember, name)
	}
	end := start + 1 + next
	out := make([]byte, 0, len(data)-(end-start))
	return append(append(out, data[:start]...), data[end:]...), nil
}
