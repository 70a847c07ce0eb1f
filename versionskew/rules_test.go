package versionskew

import (
	"strings"
	"testing"

	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/util/version"
)

// component is a component of kind and role at binary/emulation/minCompatibility.
func component(name, kind string, role Role, binary, emulation, minCompat string) Component {
	return Component{Name: name, Kind: kind, Role: role, ComponentVersions: wire.ComponentVersions{
		Binary: version.MustParse(binary), Emulation: version.MustParse(emulation), MinCompatibility: version.MustParse(minCompat)}}
}

func server(name, binary, emulation, minCompat string) Component {
	return component(name, wire.KindKubeAPIServer, APIServer, binary, emulation, minCompat)
}

func TestCheck(t *testing.T) {
	cm := func(name, emulation string) Component {
		return component(name, "controller-manager", ControllerManager, emulation, emulation, emulation)
	}
	cases := []struct {
		name       string
		components []Component
		want       []string // "component>peer: a word of the message"
	}{
		{"one release", []Component{server("a", "1.37", "1.37", "1.36"), server("b", "1.37", "1.37", "1.36"), cm("c", "1.37")}, nil},
		{"rolling upgrade, emulating the old release", []Component{server("a", "1.37", "1.36", "1.35"), server("b", "1.36", "1.36", "1.35"), cm("c", "1.36")}, nil},
		{"rolling upgrade, one step", []Component{server("a", "1.37", "1.37", "1.36"), server("b", "1.36", "1.36", "1.35")}, nil},
		{"a binary the peer's window does not include", []Component{server("a", "1.37", "1.37", "1.37"), server("b", "1.36", "1.36", "1.35")},
			[]string{"b>a: cannot be relied on to read"}},
		{"emulations two apart", []Component{server("a", "1.37", "1.37", "1.35"), server("b", "1.37", "1.35", "1.34")},
			[]string{"a>b: more than one minor above"}},
		{"skip-level: one build emulating N-3", []Component{server("a", "1.37", "1.34", "1.34"), server("b", "1.37", "1.34", "1.34")}, nil},
		{"skip-level: a newer build than the one emulating N-3", []Component{server("a", "1.38", "1.35", "1.35"), server("b", "1.37", "1.34", "1.34")},
			[]string{"a>b: cannot be relied on to read"}},
		{"controller manager older than min compatibility", []Component{server("a", "1.37", "1.37", "1.36"), cm("c", "1.35")},
			[]string{"c>a: outside [1.36, 1.37]"}},
		{"controller manager newer than emulation", []Component{server("a", "1.37", "1.36", "1.35"), cm("c", "1.37")},
			[]string{"c>a: outside [1.35, 1.36]"}},
		{"controller managers are not compared with each other", []Component{server("a", "1.37", "1.37", "1.35"), cm("c", "1.35"), cm("d", "1.37")}, nil},
		{"aggregated servers: storage only within their kind, emulation across kinds",
			[]Component{server("a", "1.37", "1.37", "1.37"), component("w", "wardle", APIServer, "1.36", "1.36", "1.36"),
				component("x", "wardle", APIServer, "1.35", "1.35", "1.35")},
			[]string{"a>x: more than one minor above", "x>w: cannot be relied on to read"}},
		{"controller managers are checked against Concord's servers only", []Component{component("w", "wardle", APIServer, "1.37", "1.37", "1.37"), cm("c", "1.35")}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.components)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d violations %+v, want %v", len(got), got, tc.want)
			}
			for i, w := range tc.want {
				pair, words, _ := strings.Cut(w, ": ")
				comp, peer, _ := strings.Cut(pair, ">")
				if got[i].Component != comp || got[i].Peer != peer || !strings.Contains(got[i].Message, words) {
					t.Errorf("violation %d = %+v, want %s", i, got[i], w)
				}
			}
		})
	}
}

func TestCRDDecodes(t *testing.T) {
	crd := CRD()
	if crd.Spec.Group != GroupVersion.Group || crd.Spec.Names.Plural != GroupResource.Resource || crd.Spec.Versions[0].Name != GroupVersion.Version {
		t.Fatalf("definition %s/%s %s does not match the package's names", crd.Spec.Group, crd.Spec.Versions[0].Name, crd.Spec.Names.Plural)
	}
}

func TestOutside(t *testing.T) {
	cm := component("c", "controller-manager", ControllerManager, "1.34", "1.34", "1.34")
	got := Outside(Check([]Component{server("a", "1.37", "1.37", "1.36"), server("b", "1.37", "1.35", "1.35"), cm}))
	// a and b are too far apart (both outside); c is outside what a and b allow (a and b
	// are not outside for it).
	if len(got) != 3 || !got["a"] || !got["b"] || !got["c"] {
		t.Fatalf("outside %v, want a, b and c", got)
	}
	if got := Outside(Check([]Component{server("a", "1.37", "1.37", "1.36"), cm})); len(got) != 1 || !got["c"] {
		t.Fatalf("outside %v, want only c", got)
	}
}
