package main

import (
	"fmt"
	"regexp"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	kubeversion "k8s.io/apimachinery/pkg/version"

	"github.com/concordproject/concord/catalog"
)

// The methods prerelease-lifecycle-gen writes on k8s.io/api types.
type (
	introducedIn  interface{ APILifecycleIntroduced() (major, minor int) }
	deprecatedIn  interface{ APILifecycleDeprecated() (major, minor int) }
	removedIn     interface{ APILifecycleRemoved() (major, minor int) }
	replacementBy interface {
		APILifecycleReplacement() schema.GroupVersionKind
	}
)

// gaVersion matches version names without a pre-release stage, betaVersion beta ones.
var (
	gaVersion   = regexp.MustCompile(`^v[0-9]+$`)
	betaVersion = regexp.MustCompile(`^v[0-9]+beta[0-9]+$`)
)

// lifecycles returns the lifecycle and replacement of every version of rs, as the
// newest release knows them, keyed by version name.
//
// A version's lifecycle is its history if it has one, else what its Go type's
// APILifecycle* methods say. A GA type without APILifecycleIntroduced was introduced
// when the newest beta of the resource was deprecated. Deprecations after newest are
// dropped with the removal and replacement they bring, and so are removals after newest
// that no deprecation announces, as the newest release cannot know of them.
func lifecycles(rs resourceSpec, kind string, newest *version.Version) (map[string]catalog.Lifecycle, map[string]string, error) {
	out := map[string]catalog.Lifecycle{}
	replacements := map[string]string{}
	var pendingGA []string
	for _, vs := range rs.versions {
		var l catalog.Lifecycle
		var replacement string
		var err error
		switch {
		case vs.history != nil:
			l, err = vs.history.lifecycle()
			replacement = vs.history.replacement
		case vs.obj != nil:
			l, replacement, err = methodLifecycle(vs.obj, rs.group, kind)
		default:
			err = fmt.Errorf("has neither a Go type nor a history")
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s/%s %s: %w", rs.group, rs.plural, vs.name, err)
		}
		if l.Introduced == nil {
			if !gaVersion.MatchString(vs.name) {
				return nil, nil, fmt.Errorf("%s/%s %s: a pre-release version without APILifecycleIntroduced", rs.group, rs.plural, vs.name)
			}
			pendingGA = append(pendingGA, vs.name)
		}
		out[vs.name], replacements[vs.name] = l, replacement
	}

	for _, name := range pendingGA {
		var beta string
		for n := range out {
			if betaVersion.MatchString(n) && out[n].Deprecated != nil &&
				(beta == "" || kubeversion.CompareKubeAwareVersionStrings(n, beta) > 0) {
				beta = n
			}
		}
		if beta == "" {
			return nil, nil, fmt.Errorf("%s/%s %s: no APILifecycleIntroduced and no deprecated beta to date it by", rs.group, rs.plural, name)
		}
		l := out[name]
		l.Introduced = out[beta].Deprecated
		out[name] = l
	}

	for name, l := range out {
		if l.Deprecated != nil && l.Deprecated.GreaterThan(newest) {
			l.Deprecated, l.Removed = nil, nil
			replacements[name] = ""
		}
		if l.Removed != nil && l.Removed.GreaterThan(newest) && l.Deprecated == nil {
			l.Removed = nil
		}
		out[name] = l
	}
	return out, replacements, nil
}

// methodLifecycle reads the APILifecycle* methods of obj; a missing method leaves its
// part of the lifecycle unset.
func methodLifecycle(obj any, group, kind string) (catalog.Lifecycle, string, error) {
	var l catalog.Lifecycle
	if o, ok := obj.(introducedIn); ok {
		l.Introduced = release(o.APILifecycleIntroduced())
	}
	if o, ok := obj.(deprecatedIn); ok {
		l.Deprecated = release(o.APILifecycleDeprecated())
	}
	if o, ok := obj.(removedIn); ok {
		l.Removed = release(o.APILifecycleRemoved())
	}
	var replacement string
	if o, ok := obj.(replacementBy); ok {
		gvk := o.APILifecycleReplacement()
		if gvk.Group != group || gvk.Kind != kind {
			return l, "", fmt.Errorf("replaced by %s, another resource: the catalog records replacements within a resource only", gvk)
		}
		replacement = gvk.Version
	}
	return l, replacement, nil
}

func release(major, minor int) *version.Version {
	return version.MajorMinor(uint(major), uint(minor))
}

// lifecycle parses a history.
func (h *history) lifecycle() (catalog.Lifecycle, error) {
	var l catalog.Lifecycle
	for _, f := range []struct {
		s   string
		dst **version.Version
	}{{h.introduced, &l.Introduced}, {h.deprecated, &l.Deprecated}, {h.removed, &l.Removed}} {
		if f.s == "" {
			continue
		}
		v, err := version.ParseGeneric(f.s)
		if err != nil {
			return l, err
		}
		*f.dst = v
	}
	if h.source == "" {
		return l, fmt.Errorf("a history must cite its source")
	}
	return l, nil
}

// apiModuleRelease returns the Kubernetes release of the k8s.io/api module this program
// is built with (v0.37.2 is release 1.37).
func apiModuleRelease() (*version.Version, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil, fmt.Errorf("no build information: cannot tell which k8s.io/api is in use")
	}
	for _, dep := range info.Deps {
		if dep.Path != "k8s.io/api" {
			continue
		}
		if dep.Replace != nil {
			dep = dep.Replace
		}
		v, err := version.ParseSemantic(dep.Version)
		if err != nil {
			return nil, fmt.Errorf("k8s.io/api version %q: %w", dep.Version, err)
		}
		if v.Major() != 0 {
			return nil, fmt.Errorf("k8s.io/api version %s does not follow the v0.<minor> scheme", dep.Version)
		}
		return version.MajorMinor(1, v.Minor()), nil
	}
	return nil, fmt.Errorf("k8s.io/api is not a dependency of this build")
}
