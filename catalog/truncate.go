package catalog

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
)

// Truncate returns the catalog as a build of release v knows it (only v's major and
// minor count): releases after v are dropped, and so are versions introduced after v,
// resources left without versions, and feature gate specs after v (and gates left
// without specs). A deprecation after v is forgotten along with the replacement it
// names; a removal after v is forgotten too, unless the version was deprecated by v,
// since a deprecation announces its removal. Everything known at v stays, including
// versions already removed by v (a build keeps what it needs to decode old objects; the
// compatibility package decides what is served).
//
// v must be one of the catalog's releases; otherwise the error wraps
// ErrUnknownRelease. Truncate(BinaryVersion()) returns an equal catalog.
//
// The result is made once per catalog and release and shared, read-only like every
// catalog: every server of a process built for one release then has the same
// Versions, whose compiled schemas (writableOf) are cached per Version.
func (c *Catalog) Truncate(v *version.Version) (*Catalog, error) {
	if v == nil {
		return nil, fmt.Errorf("%w: no release given", ErrUnknownRelease)
	}
	at := version.MajorMinor(v.Major(), v.Minor())
	if t, ok := c.truncated.Load(at.String()); ok {
		return t.(*Catalog), nil
	}
	out, err := c.truncate(at)
	if err != nil {
		return nil, err
	}
	t, _ := c.truncated.LoadOrStore(at.String(), out)
	return t.(*Catalog), nil
}

func (c *Catalog) truncate(at *version.Version) (*Catalog, error) {
	i := slices.IndexFunc(c.releases, func(r *version.Version) bool { return r.EqualTo(at) })
	if i < 0 {
		return nil, fmt.Errorf("%w: %s is not one of the releases %s to %s the API catalog describes",
			ErrUnknownRelease, at, c.releases[0], c.BinaryVersion())
	}

	out := &Catalog{
		releases: slices.Clone(c.releases[:i+1]),
		index:    make(map[schema.GroupResource]*Resource, len(c.resources)),
		gates:    make(map[featuregate.Feature]featuregate.VersionedSpecs, len(c.gates)),
	}
	for _, r := range c.resources {
		var versions []Version
		for _, ver := range r.Versions {
			if ver.Introduced.GreaterThan(at) {
				continue
			}
			if ver.Deprecated != nil && ver.Deprecated.GreaterThan(at) {
				ver.Deprecated, ver.Replacement = nil, ""
			}
			if ver.Removed != nil && ver.Removed.GreaterThan(at) && ver.Deprecated == nil {
				ver.Removed = nil
			}
			versions = append(versions, ver.at(at))
		}
		if len(versions) == 0 {
			continue
		}
		for j := range versions {
			if rep := versions[j].Replacement; rep != "" && !slices.ContainsFunc(versions, func(o Version) bool { return o.Name == rep }) {
				versions[j].Replacement = ""
			}
		}
		nr := *r
		nr.Versions = versions
		nr.compileOnUse = false // its schemas are not the ones the tests compile
		out.resources = append(out.resources, &nr)
		out.index[nr.GroupResource()] = &nr
	}
	for name, specs := range c.gates {
		var kept featuregate.VersionedSpecs
		for _, s := range specs {
			if !s.Version.GreaterThan(at) {
				kept = append(kept, s)
			}
		}
		if len(kept) > 0 {
			out.gates[name] = kept
		}
	}
	return out, nil
}
