package compatibility

import (
	"errors"
	"fmt"
	"strings"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
)

// ErrNoStorageVersion: no version of a resource is readable by every release of the
// compatibility window.
var ErrNoStorageVersion = errors.New("no storage version is readable by every release in the compatibility window")

// Versions are the three versions of KEP-4330 a server runs with.
type Versions struct {
	// Binary is the release the server was built as.
	Binary *version.Version
	// Emulation is the release whose APIs and behaviour the server presents.
	Emulation *version.Version
	// MinCompatibility is the oldest release the server's data must stay readable by
	// (rollback target).
	MinCompatibility *version.Version
}

// Default returns the versions of a server started without flags: emulation = binary,
// minimum compatibility = binary-1.
func Default(binary *version.Version) Versions {
	b := version.MajorMinor(binary.Major(), binary.Minor())
	return Versions{Binary: b, Emulation: b, MinCompatibility: b.SubtractMinor(1)}
}

// StorageVersion returns the version resource r is stored in under v (see the package
// documentation), or an error wrapping ErrNoStorageVersion that names the resource.
func StorageVersion(r *catalog.Resource, v Versions) (string, error) {
	next := v.Emulation.AddMinor(1)
	var window []*version.Version
	for rel := v.MinCompatibility; !rel.GreaterThan(next); rel = rel.AddMinor(1) {
		if knows(r, rel) {
			window = append(window, rel)
		}
	}
	var candidates []string
	for i := range r.Versions {
		ver := &r.Versions[i]
		ok := len(window) > 0
		for _, rel := range window {
			ok = ok && ver.AvailableAt(rel)
		}
		if ok {
			candidates = append(candidates, ver.Name)
		}
	}
	if len(candidates) == 0 {
		var known []string
		for _, ver := range r.Versions {
			known = append(known, fmt.Sprintf("%s %s", ver.Name, describe(ver.Lifecycle)))
		}
		return "", fmt.Errorf("%w: %s (window [%s, %s]; versions: %s)", ErrNoStorageVersion, r.GroupResource(),
			v.MinCompatibility, next, strings.Join(known, "; "))
	}
	registry.SortVersions(candidates)
	return candidates[0], nil
}

// knows reports whether release rel has any version of r.
func knows(r *catalog.Resource, rel *version.Version) bool {
	for _, ver := range r.Versions {
		if ver.AvailableAt(rel) {
			return true
		}
	}
	return false
}

func describe(l catalog.Lifecycle) string {
	s := "introduced " + l.Introduced.String()
	if l.Removed != nil {
		s += ", removed " + l.Removed.String()
	}
	return s
}

// DefaultServed reports whether a version is served at release at without any
// runtime configuration: it is available then and not alpha.
func DefaultServed(ver *catalog.Version, at *version.Version) bool {
	return ver.AvailableAt(at) && !strings.Contains(ver.Name, "alpha")
}

// Resources builds the registry resources of every catalog resource that release
// v.Emulation knows, with the versions served by default and the storage version of
// the KEP rule; hooks add Go behaviour to the resources that have some. It reports
// every resource without a storage version, not just the first.
func Resources(cat *catalog.Catalog, v Versions, hooks map[schema.GroupResource]*registry.Hooks) ([]*registry.Resource, error) {
	var out []*registry.Resource
	var errs []error
	for _, r := range cat.Resources() {
		if !knows(r, v.Emulation) {
			continue
		}
		sv, err := StorageVersion(r, v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		res, err := r.RegistryResource(catalog.Selection{
			Served:         func(ver *catalog.Version) bool { return DefaultServed(ver, v.Emulation) },
			StorageVersion: sv,
			At:             v.Emulation,
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		res.Hooks = hooks[r.GroupResource()]
		out = append(out, res)
	}
	return out, errors.Join(errs...)
}
