package compatibility

import (
	"runtime"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/component-base/featuregate"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/wire"
)

// Config is the resolved compatibility of a server (Options.Complete): which release it
// is, which it emulates, which it must stay readable by, its feature gates, the API
// versions it serves and the version each resource is stored in. A Config is immutable
// and safe for concurrent use.
type Config struct {
	// Catalog is the API catalog of the binary (built-in, --api-catalog, truncated by
	// --binary-version). Read-only.
	Catalog *catalog.Catalog
	// Versions are the binary, emulation and minimum compatibility versions.
	Versions Versions

	gate    featuregate.MutableVersionedFeatureGate // closed: no further Set
	served  sets.Set[schema.GroupVersionResource]
	storage map[schema.GroupResource]string
}

// Enabled reports whether feature f is enabled at the server's versions. A gate the
// catalog does not define (CRDValidationRatcheting, MutatingAdmissionPolicy or WatchList
// with an older --binary-version or another --api-catalog) is a feature the release
// does not have: disabled. Concord's own gates APIServerIdentity and StorageVersionAPI
// are always defined.
func (c *Config) Enabled(f featuregate.Feature) bool {
	return enabled(c.gate, f)
}

// FeatureGate returns the resolved feature gate, for code that takes a
// featuregate.FeatureGate. Its settings are final.
func (c *Config) FeatureGate() featuregate.FeatureGate {
	return c.gate
}

// Served reports whether the server serves version gvr.Version of resource
// gvr.Resource in group gvr.Group.
func (c *Config) Served(gvr schema.GroupVersionResource) bool {
	return c.served.Has(gvr)
}

// ServedResources returns every served group-version-resource, sorted by group,
// version and resource.
func (c *Config) ServedResources() []schema.GroupVersionResource {
	out := c.served.UnsortedList()
	slices.SortFunc(out, func(a, b schema.GroupVersionResource) int {
		return strings.Compare(a.Group+"/"+a.Version+"/"+a.Resource, b.Group+"/"+b.Version+"/"+b.Resource)
	})
	return out
}

// StorageVersion returns the version objects of resource gr are written in, and false if
// the server does not serve gr.
func (c *Config) StorageVersion(gr schema.GroupResource) (string, bool) {
	sv, ok := c.storage[gr]
	return sv, ok
}

// ClientVersion is the version Concord's own clients built from this Config announce in
// ClientVersionHeader: the emulation version, the release they behave as.
func (c *Config) ClientVersion() *utilversion.Version {
	return c.Versions.Emulation
}

// VersionInfo returns what /version serves: the binary's major and minor, the emulation
// and minimum compatibility versions, and build's other fields. An empty GitVersion
// becomes "v<binary>.0-concord" (wire.GitVersionSuffix: not a kube-apiserver), and
// empty GoVersion, Compiler and Platform those of the running binary.
func (c *Config) VersionInfo(build version.Info) version.Info {
	info := build
	b, e, m := c.Versions.Binary, c.Versions.Emulation, c.Versions.MinCompatibility
	info.Major, info.Minor = utilversion.Itoa(b.Major()), utilversion.Itoa(b.Minor())
	info.EmulationMajor, info.EmulationMinor = utilversion.Itoa(e.Major()), utilversion.Itoa(e.Minor())
	info.MinCompatibilityMajor, info.MinCompatibilityMinor = utilversion.Itoa(m.Major()), utilversion.Itoa(m.Minor())
	if info.GitVersion == "" {
		info.GitVersion = "v" + b.WithPatch(0).String() + wire.GitVersionSuffix
	}
	if info.GoVersion == "" {
		info.GoVersion = runtime.Version()
	}
	if info.Compiler == "" {
		info.Compiler = runtime.Compiler
	}
	if info.Platform == "" {
		info.Platform = runtime.GOOS + "/" + runtime.GOARCH
	}
	return info
}
