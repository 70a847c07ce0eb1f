package versionskew

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/util/version"
)

// Role is what a component is to the others.
type Role string

// The roles.
const (
	// APIServer: a Concord server, or an aggregated API server behind one.
	APIServer Role = "apiserver"
	// ControllerManager: a controller manager, a client of the API servers.
	ControllerManager Role = "controller"
)

// Component is one member of the control plane, as its identity lease announces it.
type Component struct {
	// Name is its identity lease's name: the server or controller manager ID.
	Name string
	// Kind is its identity label's value ("kube-apiserver" for Concord's servers, an
	// aggregated server's own kind, "controller-manager").
	Kind string
	Role Role
	wire.ComponentVersions
}

// String names the component for messages: "kube-apiserver s1 (1.37, emulating
// 1.36, min compatibility 1.35)".
func (c Component) String() string {
	return fmt.Sprintf("%s %s (%s, emulating %s, min compatibility %s)", c.Kind, c.Name, mm(c.Binary), mm(c.Emulation), mm(c.MinCompatibility))
}

// Violation is one pair of components outside the allowance: Component is the one
// out of the range Peer allows; with Mutual, neither is within the other's (API
// servers too far apart: which one should move is the operator's call).
type Violation struct {
	Component, Peer string
	Mutual          bool
	// Message says which rule, in one sentence.
	Message string
}

// Outside returns the components the violations put outside the allowance.
func Outside(violations []Violation) map[string]bool {
	out := map[string]bool{}
	for _, v := range violations {
		out[v.Component] = true
		if v.Mutual {
			out[v.Peer] = true
		}
	}
	return out
}

// Check returns every violation of the KEP-4330 version skew allowance among
// components, sorted by component then peer:
//
//   - API servers that share storage (same kind) must read what each other writes:
//     each one's binary version within the other's compatibility window
//     [min compatibility, emulation+1] (the window the storage versions it writes
//     are chosen for), widened to the other's own binary, which reads what it writes;
//   - API servers of one control plane, aggregated ones included, emulate releases
//     at most one minor apart (the version skew policy of HA API servers, applied to
//     emulation versions);
//   - a controller manager emulates a release within [min compatibility, emulation]
//     of every Concord server (kind kube-apiserver) it talks to (the KEP's allowance
//     for control-plane clients).
func Check(components []Component) []Violation {
	var out []Violation
	for _, a := range components {
		for _, b := range components {
			if a.Name == b.Name {
				continue
			}
			out = append(out, violates(a, b)...)
		}
	}
	slices.SortStableFunc(out, func(x, y Violation) int {
		return cmp.Or(cmp.Compare(x.Component, y.Component), cmp.Compare(x.Peer, y.Peer))
	})
	return out
}

// violates says how a is outside what b allows: one violation per rule it breaks.
func violates(a, b Component) []Violation {
	var out []Violation
	add := func(mutual bool, format string, args ...any) {
		out = append(out, Violation{Component: a.Name, Peer: b.Name, Mutual: mutual, Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case a.Role == ControllerManager && b.Role == APIServer && b.Kind == wire.KindKubeAPIServer:
		if !within(a.Emulation, b.MinCompatibility, b.Emulation) {
			add(false, "%s is outside [%s, %s], the controller versions %s allows", a, mm(b.MinCompatibility), mm(b.Emulation), b)
		}
	case a.Role == APIServer && b.Role == APIServer:
		if hi := readers(b); a.Kind == b.Kind && !within(a.Binary, b.MinCompatibility, hi) {
			add(false, "%s cannot be relied on to read what %s writes: its binary is outside [%s, %s]", a, b, mm(b.MinCompatibility), mm(hi))
		}
		// Reported once per pair, by the newer of the two, against both.
		if a.Emulation.GreaterThan(next(b.Emulation)) {
			add(true, "%s emulates a release more than one minor above %s", a, b)
		}
	}
	return out
}

// readers is the newest binary that can be relied on to read what b writes: one minor
// above its emulation version (the window its storage versions are chosen for), or its
// own binary when that is newer (b writes nothing its own binary cannot decode: a build
// of N emulating N-3 reads what an identical peer writes).
func readers(b Component) *version.Version {
	if hi := next(b.Emulation); hi == nil || b.Binary == nil || hi.AtLeast(b.Binary) {
		return hi
	}
	return b.Binary
}

// within reports whether v is in [lo, hi] (major.minor).
func within(v, lo, hi *version.Version) bool {
	return v != nil && lo != nil && hi != nil && v.AtLeast(lo) && !v.GreaterThan(hi)
}

// next is v's next minor.
func next(v *version.Version) *version.Version {
	if v == nil {
		return nil
	}
	return version.MajorMinor(v.Major(), v.Minor()+1)
}

// mm is v as major.minor.
func mm(v *version.Version) string {
	if v == nil {
		return "?"
	}
	return version.MajorMinor(v.Major(), v.Minor()).String()
}
