package upgradecheck

import (
	"fmt"
	"slices"
	"strings"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// persisted is what the objects of a built-in resource may be encoded in.
type persisted struct {
	// versions are the resolved versions: the StorageState's (recorded), and those
	// servers write now (writing).
	versions, recorded, writing []string
	// unknown: any version may be present, for the reason why; untracked when that
	// is because no storage-migration trigger keeps the StorageState (none, or stale).
	unknown, untracked bool
	why                string
	// unresolved are persisted hashes no known version has.
	unresolved []string
	// current is the version objects are written in now; "" when the servers disagree
	// or nothing says.
	current string
}

// persistedOf reads what in says of gr's encodings: its StorageState (none, or a stale
// one, counts as Unknown) and its StorageVersion (the versions servers write now).
func persistedOf(in *Input, gr schema.GroupResource) persisted {
	byHash := hashes(in, gr)
	var p persisted
	st, hasState := in.States[gr]
	switch {
	case !hasState:
		p.unknown, p.untracked, p.why = true, true, "it has no StorageState, so nothing records which versions its objects are in"
	case in.Staleness > 0 && in.Now.Sub(st.Heartbeat) > in.Staleness:
		p.unknown, p.untracked, p.why = true, true, fmt.Sprintf("its StorageState's heartbeat is %s old (older than %s: the storage-migration controllers are not running), so objects written since may be in any version",
			in.Now.Sub(st.Heartbeat).Round(time.Second), in.Staleness)
	}
	for _, h := range st.Persisted {
		if h == migrationapi.Unknown {
			if !p.unknown {
				p.unknown, p.why = true, "its StorageState lists Unknown: its objects may be in any version (no migration has succeeded since the state was created or reset)"
			}
			continue
		}
		if ver, ok := byHash[h]; ok {
			p.recorded = appendMissing(p.recorded, ver)
		} else {
			p.unresolved = appendMissing(p.unresolved, h)
		}
	}
	if c := st.Current; c != "" && c != migrationapi.Unknown {
		if ver, ok := byHash[c]; ok {
			p.current = ver
		} else {
			p.unresolved = appendMissing(p.unresolved, c)
		}
	}
	if enc, ok := in.StorageVersions[gr]; ok && (enc.Common != "" || len(enc.Servers) > 0) {
		ids := make([]string, 0, len(enc.Servers))
		for id := range enc.Servers {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		p.current = ""
		if enc.Common != "" {
			p.current = encodingVersion(gr, enc.Common)
			p.writing = appendMissing(p.writing, p.current)
		}
		for _, id := range ids {
			p.writing = appendMissing(p.writing, encodingVersion(gr, enc.Servers[id]))
		}
	}
	p.versions = appendMissing(slices.Clone(p.recorded), p.writing...)
	return p
}

// display is the PERSISTED cell's versions.
func (p *persisted) display() []string {
	var out []string
	if p.unknown {
		out = append(out, migrationapi.Unknown)
	}
	out = append(out, p.versions...)
	for _, h := range p.unresolved {
		out = append(out, "hash "+h)
	}
	return out
}

// need are the versions a server must decode to read every object: the resolved ones,
// and when Unknown every version the catalog ever had for gr (and the target has).
func (p *persisted) need(in *Input, gr schema.GroupResource) []string {
	out := slices.Clone(p.versions)
	if p.unknown {
		out = appendMissing(out, in.Catalog[gr].Versions...)
		out = appendMissing(out, in.Target.Resources[gr].Versions...)
	}
	return out
}

// checkBuiltin judges a resource whose versions come from the release (the API
// catalog and Concord's own definitions).
func checkBuiltin(in *Input, gr schema.GroupResource) Verdict {
	p := persistedOf(in, gr)
	v := Verdict{Resource: gr, Persisted: p.display(), Unblock: "-"}
	target, ok := in.Target.Resources[gr]
	if _, known := in.Catalog[gr]; !ok && !known {
		v.Unverified, v.Unblock = true, "-"
		return v // a resource of which this build knows nothing: see Report.Print
	}
	if !ok {
		return v // not served: a warning, see Report.Print
	}
	v.Served, v.Decodes = true, target.Versions
	need := p.need(in, gr)
	if missing := without(need, target.Versions); len(missing) > 0 || len(p.unresolved) > 0 {
		v.Blocked = true
		v.Reasons = reasons(in, &p, missing)
		unblock(in, &v, &p, need)
	}
	if uses := in.FieldUses[gr]; len(uses) > 0 {
		blockOnFields(in, &v, uses)
	}
	return v
}

// blockOnFields blocks v because persisted objects use fields the target does not
// know: a server of the target would drop them from every object it writes.
func blockOnFields(in *Input, v *Verdict, uses []FieldUse) {
	x := in.Target.Binary
	since := ""
	var paths []string
	for _, u := range uses {
		paths = appendMissing(paths, displayPath(u.Path))
		if since == "" || newer(u.Introduced, since) {
			since = u.Introduced
		}
	}
	remedy := fmt.Sprintf("clear %s, or target %s+", strings.Join(paths, ", "), since)
	if v.Blocked {
		v.Unblock += "; " + remedy
	} else {
		v.Unblock = remedy
	}
	v.Blocked = true
	v.Reasons = append(v.Reasons, fieldReasons(x, uses)...)
	v.Advice = append(v.Advice, fmt.Sprintf("Remove %s from those objects (or delete them), or choose release %s or later. Servers whose --min-compatibility-version is below %s take no new values there, but keep those already set.",
		strings.Join(paths, ", "), since, since))
}

// reasons say why the target cannot read gr's objects.
func reasons(in *Input, p *persisted, missing []string) []string {
	x := in.Target.Binary
	var out []string
	// stored: what the StorageState records (any version when Unknown); written: what
	// servers write now.
	stored := missing
	if !p.unknown {
		stored = slices.DeleteFunc(slices.Clone(missing), func(s string) bool { return !slices.Contains(p.recorded, s) })
	}
	written := slices.DeleteFunc(slices.Clone(missing), func(s string) bool { return !slices.Contains(p.writing, s) })
	switch {
	case p.unknown && len(stored) > 0:
		out = append(out, fmt.Sprintf("%s; release %s cannot decode %s", p.why, x, strings.Join(stored, ", ")))
	case len(stored) > 0:
		out = append(out, fmt.Sprintf("objects may be encoded in %s, which release %s cannot decode", strings.Join(stored, ", "), x))
	}
	if len(written) > 0 {
		out = append(out, fmt.Sprintf("servers write %s now (StorageVersion), which release %s cannot decode", strings.Join(written, ", "), x))
	}
	for _, h := range p.unresolved {
		out = append(out, fmt.Sprintf("persisted storage version hash %s matches no version the API catalog knows (written by a newer release?)", h))
	}
	return out
}

// unblock fills in what makes the move to the target safe: the migration to the
// current storage version when the target decodes it; otherwise the newest step
// release that decodes what is persisted and stores a version the target decodes.
func unblock(in *Input, v *Verdict, p *persisted, need []string) {
	x, name := in.Target.Binary, v.Name()
	target := in.Target.Resources[v.Resource]
	switch {
	case p.current == "":
		v.Unblock = "wait: servers disagree"
		v.Advice = []string{fmt.Sprintf("The servers do not agree on a storage version (a rolling upgrade or rollback is under way): finish it, let the storage-migration trigger migrate %s, and check again.", name)}
		v.Advice = append(v.Advice, migrationAdvice(in, v.Resource)...)
	case slices.Contains(target.Versions, p.current) && len(without(p.writing, target.Versions)) == 0:
		v.Migrate = true
		v.Unblock = "migrate to " + p.current
		by := "the storage-migration trigger starts this migration by itself while the servers agree, and when it succeeds the StorageState lists " + p.current + " alone"
		if p.untracked {
			by = "no storage-migration trigger keeps its StorageState, so run the storage-migration controllers (`concord server` runs them unless --disable-storage-migration; or `concord controller-manager`): they migrate it and record that they did"
		}
		v.Advice = []string{fmt.Sprintf("Migrate %s to %s, which release %s decodes: %s.", name, p.current, x, by)}
		v.Advice = append(v.Advice, migrationAdvice(in, v.Resource)...)
	default:
		v.Advice = []string{fmt.Sprintf("Its current storage version, %s, is not decodable by %s either: no migration makes the move safe at this minimum compatibility version.", p.current, x)}
		step, ok := findStep(in, v.Resource, need)
		if !ok {
			v.Unblock = "none: no safe path"
			v.Advice = append(v.Advice, fmt.Sprintf("No release of the API catalog both decodes what is persisted and stores %s in a version %s decodes: choose a newer target release.", name, x))
			return
		}
		s := step.Resources[v.Resource]
		v.Unblock = fmt.Sprintf("via %s --min-compatibility-version=%s", step.Binary, step.MinCompatibility)
		v.Advice = append(v.Advice, fmt.Sprintf("Safe path: move to release %s with --min-compatibility-version=%s first (check that move with --to-version %s): it decodes what is persisted and stores %s in %s, which %s decodes. Let the storage-migration trigger migrate %s to %s, check again, then move to %s.",
			step.Binary, step.MinCompatibility, step.Binary, name, s.StorageVersion, x, name, s.StorageVersion, x))
	}
}

// findStep returns the newest step release that serves gr, decodes need and stores gr
// in a version the target decodes.
func findStep(in *Input, gr schema.GroupResource, need []string) (Release, bool) {
	target := in.Target.Resources[gr]
	var best Release
	found := false
	for _, step := range in.Steps {
		s, ok := step.Resources[gr]
		if !ok || len(without(need, s.Versions)) > 0 || !slices.Contains(target.Versions, s.StorageVersion) {
			continue
		}
		if !found || newer(step.Binary, best.Binary) {
			best, found = step, true
		}
	}
	return best, found
}

// newer reports whether release a (major.minor) is newer than b.
func newer(a, b string) bool {
	var am, an, bm, bn int
	_, errA := fmt.Sscanf(a, "%d.%d", &am, &an)
	_, errB := fmt.Sscanf(b, "%d.%d", &bm, &bn)
	if errA != nil || errB != nil {
		return a > b
	}
	return am > bm || (am == bm && an > bn)
}

// migrationAdvice describes gr's latest migration, if any.
func migrationAdvice(in *Input, gr schema.GroupResource) []string {
	m, ok := in.Migrations[gr]
	if !ok {
		return nil
	}
	phase := m.Phase
	if m.Reason != "" {
		phase += " (" + m.Reason + ")"
	}
	return []string{fmt.Sprintf("Its latest migration, %s, is %s: see `concord migrations %s`.", m.Name, phase, migrationapi.StorageStateName(gr))}
}
