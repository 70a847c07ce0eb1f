package compatibility

import (
	"errors"
	"fmt"
	"strings"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/registry"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
)

// ErrNoStorageVersion means that no version of a resource is readable by every release in the
// compatibility window.
var ErrNoStorageVersion = errors.New("no storage version is readable by every release in the compatibility window")

// StorageVersion returns the version resource r is stored in under v: the newest version
// (Kubernetes-aware order) that every release in [v.MinCompatibility, v.Emulation+1]
// knowing r has. Releases of the window that do not know r at all do not constrain it
// (they cannot serve r, whatever the encoding); if no release of the window knows r (it
// is served only through forward compatibility), the binary's own release constrains it.
//
// No qualifying version is an error wrapping ErrNoStorageVersion that names the
// resource, lists its versions and, when one exists, the lowest minimum compatibility
// version that would have one.
func StorageVersion(r *catalog.Resource, v Versions) (string, error) {
	if sv, ok := storageVersion(r, v); ok {
		return sv, nil
	}
	var known []string
	for _, ver := range r.Versions {
		known = append(known, fmt.Sprintf("%s %s", ver.Name, describe(ver.Lifecycle)))
	}
	hint := ""
	for m := v.MinCompatibility.AddMinor(1); !m.GreaterThan(v.Emulation); m = m.AddMinor(1) {
		if _, ok := storageVersion(r, Versions{Binary: v.Binary, Emulation: v.Emulation, MinCompatibility: m}); ok {
			hint = fmt.Sprintf("; --min-compatibility-version %s or later would allow one", m)
			break
		}
	}
	return "", fmt.Errorf("%w: %s (window [%s, %s]; versions: %s)%s", ErrNoStorageVersion, r.GroupResource(),
		v.MinCompatibility, v.Emulation.AddMinor(1), strings.Join(known, "; "), hint)
}

// storageVersion applies the rule of StorageVersion; ok is false when no version
// qualifies.
func storageVersion(r *catalog.Resource, v Versions) (string, bool) {
	var window []*version.Version
	for _, rel := range v.Window() {
		if knows(r, rel) {
			window = append(window, rel)
		}
	}
	if len(window) == 0 {
		window = []*version.Version{v.Binary}
	}
	var candidates []string
	for i := range r.Versions {
		ver := &r.Versions[i]
		ok := true
		for _, rel := range window {
			ok = ok && ver.AvailableAt(rel)
		}
		if ok {
			candidates = append(candidates, ver.Name)
		}
	}
	if len(candidates) == 0 {
		return "", false
	}
	registry.SortVersions(candidates)
	return candidates[0], true
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

// Resources builds the registry resources a server at versions v serves with no other
// flags (default feature gates and API enablement): see Config.Resources. v.Binary must
// be cat's binary version.
func Resources(cat *catalog.Catalog, v Versions) ([]*registry.Resource, error) {
	if !v.Binary.EqualTo(cat.BinaryVersion()) {
		return nil, fmt.Errorf("binary version %s is not the API catalog's (%s)", v.Binary, cat.BinaryVersion())
	}
	cfg, err := (&Options{
		Catalog:                 cat,
		EmulationVersion:        []string{v.Emulation.String()},
		MinCompatibilityVersion: []string{v.MinCompatibility.String()},
	}).complete(logr.Discard())
	if err != nil {
		return nil, err
	}
	return cfg.Resources()
}

// Resources builds the registry resource of every catalog resource the server serves in
// at least one version: every version the binary knows (all decodable), the served ones
// marked Served, deprecation warnings as of the emulation version, and the storage
// version of the KEP rule (see StorageVersion). They are definitions only: the Go
// behaviour of the few that have some is added by package builtin. The resources are
// new on every call and the caller's.
func (c *Config) Resources() ([]*registry.Resource, error) {
	var out []*registry.Resource
	var errs []error
	for _, r := range c.Catalog.Resources() {
		sv, ok := c.storage[r.GroupResource()]
		if !ok {
			continue
		}
		group, plural := r.Group, r.Names.Plural
		res, err := r.RegistryResource(catalog.Selection{
			Served: func(ver *catalog.Version) bool {
				return c.served.Has(schema.GroupVersionResource{Group: group, Version: ver.Name, Resource: plural})
			},
			StorageVersion:   sv,
			At:               c.Versions.Emulation,
			MinCompatibility: c.Versions.MinCompatibility,
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, res)
	}
	return out, errors.Join(errs...)
}

// storageVersions chooses the storage version of every resource served in at least one
// version, reporting every resource without one.
func storageVersions(cat *catalog.Catalog, v Versions, served map[schema.GroupResource]bool) (map[schema.GroupResource]string, []error) {
	out := map[schema.GroupResource]string{}
	var errs []error
	for _, r := range cat.Resources() {
		if !served[r.GroupResource()] {
			continue
		}
		sv, err := StorageVersion(r, v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[r.GroupResource()] = sv
	}
	return out, errs
}
