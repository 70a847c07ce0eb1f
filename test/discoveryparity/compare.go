package discoveryparity

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Own is a resource a server serves on purpose in a group version where
// kube-apiserver does not, with the reason: the entry and its subresources are then
// expected. Where kube serves it too, it is compared as any other.
type Own struct {
	GroupVersion string // as discovery names it: "v1", "apps/v1"
	Resource     string // plural name
	Reason       string
}

// Known is a difference a server is known to have, with the reason (what it lacks
// and which work would remove it): a subresource kube lists that the server does not
// (Resource "pods/log", Field "subresources"), or a field of an entry both list that
// differs (Resource "tokenreviews", Field "storageVersionHash"). The difference is
// then expected; a Known that does not happen is reported, so that the list shrinks
// as the server catches up.
type Known struct {
	GroupVersion string // as discovery names it: "v1", "apps/v1"
	Resource     string // "<resource>" or "<resource>/<subresource>"
	Field        string // "subresources" or one of FieldOrder
	// Emulation limits the difference to the recording of one emulation version
	// ("1.37"); "" is every recording.
	Emulation string
	Reason    string
}

// Report is how one server's discovery differs from kube-apiserver's. Every list is
// sorted; lines name a group version as discovery does ("v1", "apps/v1") and then the
// resource.
type Report struct {
	Kube, Server string
	// KubeResources is how many resources (group and resource, subresources and
	// versions not counted apart) kube lists; KubeEntries how many entries (one per
	// version, subresources included).
	KubeResources, KubeEntries int
	// MissingResources are resources kube serves in no version of which the server
	// serves: "<resource>.<group> (<versions>)".
	MissingResources []string
	// MissingVersions are group versions of a resource the server serves in another
	// version only: "<group version> <resource> (served: <versions>)".
	MissingVersions []string
	// Extra are resources the server serves in a group version where kube does not,
	// not declared Own.
	Extra []string
	// OwnServed are the declared Own resources the server serves where kube does
	// not (expected); OwnWrong are declarations that do not hold: the server does
	// not serve the resource in that group version.
	OwnServed, OwnWrong []string
	// KnownSeen are the declared Known differences found (expected), with their
	// reasons; KnownWrong the declarations of this recording's emulation version
	// that do not happen.
	KnownSeen, KnownWrong []string
	// PreferredVersions are groups whose preferred version differs.
	PreferredVersions []string
	// Fields are the differences of resources (and subresources) both serve in the
	// same group version, by field: "subresources", "verbs", "shortNames",
	// "categories", "kind", "namespaced", "singularName", "storageVersionHash".
	Fields map[string][]string
}

// FieldOrder is the order in which Report prints the per-resource differences.
var FieldOrder = []string{"subresources", "verbs", "shortNames", "categories", "kind", "namespaced", "singularName", "storageVersionHash"}

type entryKey struct{ gv, name string }

func index(r *Record) (entries map[entryKey]Resource, versions map[string][]string, preferred map[string]string) {
	entries, versions, preferred = map[entryKey]Resource{}, map[string][]string{}, map[string]string{}
	for _, g := range r.Groups {
		preferred[g.Name] = g.PreferredVersion
		for _, v := range g.Versions {
			gv := v.Version
			if g.Name != "" {
				gv = g.Name + "/" + v.Version
			}
			for _, res := range v.Resources {
				entries[entryKey{gv, res.Name}] = res
				if !strings.Contains(res.Name, "/") {
					gr := groupResource(g.Name, res.Name)
					versions[gr] = append(versions[gr], v.Version)
				}
			}
		}
	}
	return entries, versions, preferred
}

func groupResource(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

func groupOf(gv string) string {
	if i := strings.Index(gv, "/"); i >= 0 {
		return gv[:i]
	}
	return ""
}

// knownKey names a Known difference.
type knownKey struct{ gv, name, field string }

// knownSet is the Known differences of one recording, and which happened.
type knownSet struct {
	rep      *Report
	expected map[knownKey]Known
	seen     map[knownKey]bool
}

func newKnownSet(rep *Report, known []Known, emulation string) *knownSet {
	ks := &knownSet{rep: rep, expected: map[knownKey]Known{}, seen: map[knownKey]bool{}}
	for _, k := range known {
		if k.Emulation == "" || k.Emulation == emulation {
			ks.expected[knownKey{k.GroupVersion, k.Resource, k.Field}] = k
		}
	}
	return ks
}

// differs records a difference of field for an entry, unless it is known.
func (ks *knownSet) differs(gv, name, field, line string) {
	key := knownKey{gv, name, field}
	if k, ok := ks.expected[key]; ok {
		ks.seen[key] = true
		ks.rep.KnownSeen = append(ks.rep.KnownSeen, fmt.Sprintf("%s %s %s: %s", gv, name, field, k.Reason))
		return
	}
	ks.rep.Fields[field] = append(ks.rep.Fields[field], line)
}

// finish reports the known differences that did not happen, and sorts.
func (ks *knownSet) finish() {
	for key, k := range ks.expected {
		if !ks.seen[key] {
			ks.rep.KnownWrong = append(ks.rep.KnownWrong, fmt.Sprintf("%s %s %s: declared a known difference, but there is none", k.GroupVersion, k.Resource, k.Field))
		}
	}
	slices.Sort(ks.rep.KnownSeen)
	slices.Sort(ks.rep.KnownWrong)
}

// Compare compares server's discovery with kube's; own are the resources the server
// serves on purpose that kube does not, known the differences it is known to have.
func Compare(kube, server *Record, own []Own, known []Known) *Report {
	rep := &Report{Kube: kube.Server + " emulating " + kube.EmulationVersion, Server: server.Server + " emulating " + server.EmulationVersion, Fields: map[string][]string{}}
	ke, kv, kp := index(kube)
	se, sv, sp := index(server)
	rep.KubeResources, rep.KubeEntries = len(kv), len(ke)
	isOwn := map[entryKey]bool{}
	for _, o := range own {
		isOwn[entryKey{o.GroupVersion, o.Resource}] = true
	}
	ks := newKnownSet(rep, known, kube.EmulationVersion)
	for _, gr := range slices.Sorted(maps.Keys(kv)) {
		if _, ok := sv[gr]; !ok {
			rep.MissingResources = append(rep.MissingResources, fmt.Sprintf("%s (%s)", gr, strings.Join(kv[gr], ", ")))
		}
	}
	for _, k := range sortedKeys(ke) {
		parent, sub, isSub := strings.Cut(k.name, "/")
		gr := groupResource(groupOf(k.gv), parent)
		if _, ok := sv[gr]; !ok {
			continue // a missing resource
		}
		if _, ok := se[entryKey{k.gv, parent}]; !ok {
			if !isSub {
				rep.MissingVersions = append(rep.MissingVersions, fmt.Sprintf("%s %s (served: %s)", k.gv, parent, strings.Join(sv[gr], ", ")))
			}
			continue
		}
		got, ok := se[k]
		if !ok {
			ks.differs(k.gv, k.name, "subresources", fmt.Sprintf("%s %s: lacks %s", k.gv, parent, sub))
			continue
		}
		compareEntry(k, ke[k], got, ks.differs)
	}
	for _, k := range sortedKeys(se) {
		parent, sub, isSub := strings.Cut(k.name, "/")
		gr := groupResource(groupOf(k.gv), parent)
		if _, ok := ke[entryKey{k.gv, parent}]; !ok {
			if !isSub && !isOwn[entryKey{k.gv, parent}] {
				line := fmt.Sprintf("%s %s", k.gv, parent)
				if vs, ok := kv[gr]; ok {
					line += fmt.Sprintf(" (kube serves %s)", strings.Join(vs, ", "))
				}
				rep.Extra = append(rep.Extra, line)
			}
			continue
		}
		if _, ok := ke[k]; !ok {
			rep.Fields["subresources"] = append(rep.Fields["subresources"], fmt.Sprintf("%s %s: also serves %s, which kube does not", k.gv, parent, sub))
		}
	}
	compareOwn(rep, own, se, ke)
	ks.finish()
	for _, g := range slices.Sorted(maps.Keys(kp)) {
		if s, ok := sp[g]; ok && s != kp[g] {
			name := g
			if name == "" {
				name = `"" (core)`
			}
			rep.PreferredVersions = append(rep.PreferredVersions, fmt.Sprintf("%s: kube prefers %s, the server %s", name, kp[g], s))
		}
	}
	return rep
}

// compareOwn reports the declared Own resources: served as expected, or not served.
func compareOwn(rep *Report, own []Own, se, ke map[entryKey]Resource) {
	for _, o := range own {
		k := entryKey{o.GroupVersion, o.Resource}
		_, served := se[k]
		_, kubeToo := ke[k]
		switch {
		case !served:
			rep.OwnWrong = append(rep.OwnWrong, fmt.Sprintf("%s %s: declared the server's own, but the server does not serve it", o.GroupVersion, o.Resource))
		case !kubeToo:
			rep.OwnServed = append(rep.OwnServed, fmt.Sprintf("%s %s: %s", o.GroupVersion, o.Resource, o.Reason))
		}
	}
	slices.Sort(rep.OwnServed)
	slices.Sort(rep.OwnWrong)
}

func sortedKeys(m map[entryKey]Resource) []entryKey {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b entryKey) int {
		if c := strings.Compare(a.gv, b.gv); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	return keys
}

// compareEntry reports, through differs, how got differs from want by field.
func compareEntry(k entryKey, want, got Resource, differs func(gv, name, field, line string)) {
	add := func(field, format string, args ...any) {
		differs(k.gv, k.name, field, fmt.Sprintf("%s %s: ", k.gv, k.name)+fmt.Sprintf(format, args...))
	}
	if d := setDiff(want.Verbs, got.Verbs); d != "" {
		add("verbs", "%s", d)
	}
	if d := setDiff(want.ShortNames, got.ShortNames); d != "" {
		add("shortNames", "%s", d)
	}
	if d := setDiff(want.Categories, got.Categories); d != "" {
		add("categories", "%s", d)
	}
	if kind(want) != kind(got) {
		add("kind", "kube %s, the server %s", kind(want), kind(got))
	}
	if want.Namespaced != got.Namespaced {
		add("namespaced", "kube %t, the server %t", want.Namespaced, got.Namespaced)
	}
	if want.SingularName != got.SingularName {
		add("singularName", "kube %q, the server %q", want.SingularName, got.SingularName)
	}
	if want.StorageVersionHash != got.StorageVersionHash {
		add("storageVersionHash", "kube %q, the server %q", want.StorageVersionHash, got.StorageVersionHash)
	}
}

// kind is the kind as "<group>/<version>.<Kind>" when the entry names a group or
// version, else the kind alone (of the entry's own group version).
func kind(r Resource) string {
	if r.Group == "" && r.Version == "" {
		return r.Kind
	}
	return r.Group + "/" + r.Version + "." + r.Kind
}

// setDiff says what is in want and not in got ("lacks") and in got and not in want
// ("also"); "" if the two hold the same.
func setDiff(want, got []string) string {
	var lacks, also []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			lacks = append(lacks, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			also = append(also, g)
		}
	}
	var parts []string
	if len(lacks) > 0 {
		parts = append(parts, "lacks "+strings.Join(lacks, ", "))
	}
	if len(also) > 0 {
		parts = append(parts, "also "+strings.Join(also, ", "))
	}
	return strings.Join(parts, "; ")
}

// Empty tells whether the server lists what kube lists and nothing else but its own,
// its known differences apart, and whether every known difference declared happens.
func (r *Report) Empty() bool {
	n := len(r.MissingResources) + len(r.MissingVersions) + len(r.Extra) + len(r.OwnWrong) + len(r.KnownWrong) + len(r.PreferredVersions)
	for _, lines := range r.Fields {
		n += len(lines)
	}
	return n == 0
}

// Summary is one line per kind of difference, with its count.
func (r *Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s lists %d resources (%d discovery entries); %s:\n", r.Kube, r.KubeResources, r.KubeEntries, r.Server)
	line := func(n int, what string) {
		fmt.Fprintf(&b, "  %3d %s\n", n, what)
	}
	line(len(r.MissingResources), "resources kube serves that the server does not")
	line(len(r.MissingVersions), "versions of resources the server serves in another version only")
	line(len(r.Extra), "resources the server serves that kube does not (not its own)")
	line(len(r.OwnServed), "of the server's own resources served (expected)")
	line(len(r.OwnWrong), "declarations of the server's own resources that do not hold")
	line(len(r.KnownSeen), "known differences found (expected)")
	line(len(r.KnownWrong), "declarations of known differences that do not happen")
	line(len(r.PreferredVersions), "groups preferring another version")
	for _, f := range FieldOrder {
		line(len(r.Fields[f]), "resources (or subresources) differing in "+f)
	}
	return b.String()
}

// String is the summary and then every difference.
func (r *Report) String() string {
	var b strings.Builder
	b.WriteString(r.Summary())
	section := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s (%d):\n", title, len(lines))
		for _, l := range lines {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	section("Resources kube serves that the server does not", r.MissingResources)
	section("Versions missing (the resource is served in another version)", r.MissingVersions)
	section("Resources the server serves that kube does not", r.Extra)
	section("Declared the server's own, wrongly", r.OwnWrong)
	section("Declared known differences that do not happen", r.KnownWrong)
	section("Preferred versions", r.PreferredVersions)
	for _, f := range FieldOrder {
		section("Differences in "+f, r.Fields[f])
	}
	section("The server's own resources (expected)", r.OwnServed)
	section("Known differences (expected)", r.KnownSeen)
	return b.String()
}
