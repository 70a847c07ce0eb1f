package discoveryparity_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/concordproject/concord/test/discoveryparity"
)

// Compare finds each kind of difference, and none between a recording and itself:
// the zeros of TestDiscoveryParity are not for want of looking.
func TestCompare(t *testing.T) {
	kube, err := discoveryparity.Load(filepath.Join("testdata", discoveryparity.RecordingName("1.37.2", "1.37")))
	if err != nil {
		t.Fatal(err)
	}
	if rep := discoveryparity.Compare(kube, clone(t, kube), nil, nil); !rep.Empty() {
		t.Fatalf("a recording differs from itself:\n%s", rep)
	}
	server := clone(t, kube)
	entry := func(group, version, name string) *discoveryparity.Resource {
		for gi := range server.Groups {
			for vi := range server.Groups[gi].Versions {
				v := &server.Groups[gi].Versions[vi]
				for ri := range v.Resources {
					if server.Groups[gi].Name == group && v.Version == version && v.Resources[ri].Name == name {
						return &v.Resources[ri]
					}
				}
			}
		}
		t.Fatalf("no %s/%s %s in the recording", group, version, name)
		return nil
	}
	remove := func(group, version string, names ...string) {
		for gi := range server.Groups {
			for vi := range server.Groups[gi].Versions {
				v := &server.Groups[gi].Versions[vi]
				if server.Groups[gi].Name == group && v.Version == version {
					v.Resources = slices.DeleteFunc(v.Resources, func(r discoveryparity.Resource) bool { return slices.Contains(names, r.Name) })
				}
			}
		}
	}
	remove("", "v1", "pods", "pods/status", "pods/log", "pods/exec", "pods/attach", "pods/binding", "pods/eviction",
		"pods/ephemeralcontainers", "pods/portforward", "pods/proxy", "pods/resize")
	remove("autoscaling", "v1", "horizontalpodautoscalers", "horizontalpodautoscalers/status")
	remove("apps", "v1", "deployments/scale", "deployments/status")
	entry("apps", "v1", "deployments").Verbs = []string{"get"}
	entry("apps", "v1", "deployments").ShortNames = nil
	entry("apps", "v1", "deployments").Categories = []string{"all", "extra"}
	entry("apps", "v1", "replicasets").Kind = "Other"
	entry("apps", "v1", "replicasets").Namespaced = false
	entry("apps", "v1", "replicasets").SingularName = "rs"
	entry("apps", "v1", "replicasets").StorageVersionHash = "x"
	server.Groups[0].Versions[0].Resources = append(server.Groups[0].Versions[0].Resources, discoveryparity.Resource{Name: "widgets", Kind: "Widget"})
	for gi := range server.Groups {
		if server.Groups[gi].Name == "autoscaling" {
			server.Groups[gi].PreferredVersion = "v1"
		}
	}
	own := []discoveryparity.Own{{GroupVersion: "v1", Resource: "gadgets", Reason: "not served"}}
	known := []discoveryparity.Known{
		{GroupVersion: "apps/v1", Resource: "deployments/status", Field: "subresources", Reason: "not yet"},
		{GroupVersion: "v1", Resource: "configmaps", Field: "verbs", Reason: "no such difference"},
		{GroupVersion: "v1", Resource: "secrets", Field: "verbs", Emulation: "1.36", Reason: "another recording's"},
	}
	rep := discoveryparity.Compare(kube, server, own, known)
	t.Logf("%s", rep)
	check := func(what string, got []string, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %q, want %d like %q", what, got, len(want), want)
			return
		}
		for i := range want {
			if !strings.Contains(got[i], want[i]) {
				t.Errorf("%s: %q, want it to say %q", what, got[i], want[i])
			}
		}
	}
	check("missing", rep.MissingResources, "pods (v1)")
	check("versions", rep.MissingVersions, "autoscaling/v1 horizontalpodautoscalers (served: v2)")
	check("extra", rep.Extra, "v1 widgets")
	check("own", rep.OwnWrong, "v1 gadgets")
	check("known", rep.KnownSeen, "apps/v1 deployments/status subresources: not yet")
	check("known wrong", rep.KnownWrong, "v1 configmaps verbs: declared a known difference, but there is none")
	check("preferred", rep.PreferredVersions, "autoscaling: kube prefers v2, the server v1")
	check("subresources", rep.Fields["subresources"], "apps/v1 deployments: lacks scale")
	check("verbs", rep.Fields["verbs"], "apps/v1 deployments: lacks create, delete, deletecollection, list, patch, update, watch")
	check("shortNames", rep.Fields["shortNames"], "apps/v1 deployments: lacks deploy")
	check("categories", rep.Fields["categories"], "apps/v1 deployments: also extra")
	check("kind", rep.Fields["kind"], "apps/v1 replicasets: kube ReplicaSet, the server Other")
	check("namespaced", rep.Fields["namespaced"], "apps/v1 replicasets: kube true, the server false")
	check("singularName", rep.Fields["singularName"], `apps/v1 replicasets: kube "replicaset", the server "rs"`)
	check("storageVersionHash", rep.Fields["storageVersionHash"], `apps/v1 replicasets: kube "`)
}

func clone(t *testing.T, r *discoveryparity.Record) *discoveryparity.Record {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	out := &discoveryparity.Record{}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return out
}
