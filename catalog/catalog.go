package catalog

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	kubeversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/component-base/featuregate"

	"github.com/concordproject/concord/registry"
)

// ErrInvalid is returned (wrapped) by New, Parse and Load when a catalog is not coherent;
// the message lists every problem with its field path.
var ErrInvalid = errors.New("invalid API catalog")

// ErrUnknownRelease is returned (wrapped) by Truncate when asked for a release the
// catalog does not describe.
var ErrUnknownRelease = errors.New("release not in the API catalog")

// ErrUnknownVersion is returned (wrapped) when an object or a decision names a version
// the resource does not have in the catalog.
var ErrUnknownVersion = errors.New("version not in the API catalog")

// Catalog is the description of a server's built-in APIs and feature gates across a run
// of releases. A Catalog is immutable: every accessor returns either a copy or values
// the caller must treat as read-only (the *Resource pointers, their schemas and the
// *version.Version values), so one Catalog may be shared by any number of goroutines.
type Catalog struct {
	// releases are the releases described, oldest first; the last is the binary version.
	releases []*version.Version
	// resources are sorted by group (core first) then plural.
	resources []*Resource
	index     map[schema.GroupResource]*Resource
	gates     map[featuregate.Feature]featuregate.VersionedSpecs
	// truncated are the catalogs Truncate made, by release.
	truncated sync.Map // string → *Catalog
}

// Resource is one built-in resource and every version of it the catalog knows. Treat a
// *Resource obtained from a Catalog as read-only.
type Resource struct {
	// Group is the API group; "" is the legacy core group.
	Group string
	// Names are the plural, singular, kind, list kind, short names and categories. New
	// and Parse fill Singular (lower-case Kind) and ListKind (Kind + "List") when unset.
	Names apiextensionsv1.CustomResourceDefinitionNames
	// Namespaced is true for namespace-scoped resources.
	Namespaced bool
	// Subresources are the subresources every version serves (status, and scale for
	// the few resources that have it; nil: none).
	Subresources *apiextensionsv1.CustomResourceSubresources
	// PrinterColumns are the extra Table columns of every version (optional).
	PrinterColumns []apiextensionsv1.CustomResourceColumnDefinition
	// Versions are the versions, in Kubernetes-aware priority order (v2, v1, v1beta1,
	// v1alpha1). New and Parse sort them.
	Versions []Version

	// compileOnUse is set on the resources of Default's catalog, whose schemas the
	// catalog's tests compile: RegistryResource leaves their compilation to first
	// use. Any other catalog's (a file's, a truncation's) are compiled there, so that
	// one that does not compile fails the server's start.
	compileOnUse bool
}

// Version is one version of a Resource: its lifecycle and its schema.
type Version struct {
	// Name is the version, e.g. "v2beta2".
	Name string
	// Lifecycle says when the version was introduced, deprecated and removed.
	Lifecycle
	// Replacement names the version of the same resource clients should move to once
	// this one is deprecated ("" if none is recorded).
	Replacement string
	// Schema is the structural OpenAPI v3 schema of the whole object; nil accepts any
	// object. It is shared: never modify it.
	Schema *apiextensionsv1.JSONSchemaProps
	// Fields are the fields of Schema introduced after the version itself, by path
	// (see SchemaAt), with the release that introduced each; EnumValues the values of
	// Schema's enums introduced after their field, by path and value. A build of an
	// older release (Truncate) lacks them; a server takes no new data in a field, nor
	// accepts an enum value, that its minimum compatibility release lacks (KEP-4330).
	// Shared: never modify them.
	Fields     map[string]*version.Version
	EnumValues map[string]map[string]*version.Version
}

// Lifecycle is the release history of one version of a resource, as major.minor
// releases. Introduced is always set; Deprecated and Removed are nil when the release
// the catalog describes knows of no deprecation or removal.
type Lifecycle struct {
	Introduced *version.Version
	Deprecated *version.Version
	Removed    *version.Version
}

// AvailableAt reports whether the version exists in release r: introduced at or before
// r and not removed at or before r.
func (l Lifecycle) AvailableAt(r *version.Version) bool {
	return l.Introduced != nil && !l.Introduced.GreaterThan(r) && (l.Removed == nil || r.LessThan(l.Removed))
}

// DeprecatedAt reports whether the version is deprecated in release r.
func (l Lifecycle) DeprecatedAt(r *version.Version) bool {
	return l.Deprecated != nil && !l.Deprecated.GreaterThan(r)
}

// New builds a catalog from releases (each major.minor), resources and feature gates,
// and validates it. The arguments are copied (schemas and versions are shared, not
// cloned: do not modify them afterwards). Resources' versions are sorted and their
// Singular and ListKind names defaulted. The error wraps ErrInvalid and lists every
// problem found.
func New(releases []*version.Version, resources []Resource, gates map[featuregate.Feature]featuregate.VersionedSpecs) (*Catalog, error) {
	c := &Catalog{
		releases: slices.Clone(releases),
		index:    make(map[schema.GroupResource]*Resource, len(resources)),
		gates:    make(map[featuregate.Feature]featuregate.VersionedSpecs, len(gates)),
	}
	for i := range resources {
		r := resources[i]
		r.compileOnUse = false // only Default's catalog compiles on use
		r.Versions = slices.Clone(r.Versions)
		r.Names.ShortNames = slices.Clone(r.Names.ShortNames)
		r.Names.Categories = slices.Clone(r.Names.Categories)
		r.PrinterColumns = slices.Clone(r.PrinterColumns)
		if r.Names.Singular == "" {
			r.Names.Singular = strings.ToLower(r.Names.Kind)
		}
		if r.Names.ListKind == "" && r.Names.Kind != "" {
			r.Names.ListKind = r.Names.Kind + "List"
		}
		sortVersions(r.Versions)
		c.resources = append(c.resources, &r)
	}
	sortResources(c.resources)
	for name, specs := range gates {
		c.gates[name] = slices.Clone(specs)
	}
	if errs := c.validate(); len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, errs.ToAggregate())
	}
	for _, r := range c.resources {
		c.index[r.GroupResource()] = r
	}
	return c, nil
}

// Releases returns the releases the catalog describes, oldest first.
func (c *Catalog) Releases() []*version.Version {
	return slices.Clone(c.releases)
}

// BinaryVersion returns the newest release in the catalog: the version of the binary
// whose APIs the catalog describes.
func (c *Catalog) BinaryVersion() *version.Version {
	return c.releases[len(c.releases)-1]
}

// Resources returns every resource, core group first, then by group and plural name.
// The slice is the caller's; the resources are shared and read-only.
func (c *Catalog) Resources() []*Resource {
	return slices.Clone(c.resources)
}

// Resource returns the resource with the given group and plural name, or nil.
func (c *Catalog) Resource(group, plural string) *Resource {
	return c.index[schema.GroupResource{Group: group, Resource: plural}]
}

// FeatureGates returns the versioned specs of every feature gate, as component-base's
// featuregate.MutableVersionedFeatureGate.AddVersioned takes them. The map and slices
// are the caller's.
func (c *Catalog) FeatureGates() map[featuregate.Feature]featuregate.VersionedSpecs {
	out := make(map[featuregate.Feature]featuregate.VersionedSpecs, len(c.gates))
	for name, specs := range c.gates {
		out[name] = slices.Clone(specs)
	}
	return out
}

// GroupResource returns the resource's group and plural name.
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Names.Plural}
}

// Version returns the named version, or nil.
func (r *Resource) Version(name string) *Version {
	for i := range r.Versions {
		if r.Versions[i].Name == name {
			return &r.Versions[i]
		}
	}
	return nil
}

// sortVersions sorts versions in Kubernetes-aware priority order, newest first.
func sortVersions(vs []Version) {
	slices.SortStableFunc(vs, func(a, b Version) int {
		return -kubeversion.CompareKubeAwareVersionStrings(a.Name, b.Name)
	})
}

// sortResources sorts resources by group (the core group first) and plural name.
func sortResources(rs []*Resource) {
	slices.SortStableFunc(rs, func(a, b *Resource) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Names.Plural, b.Names.Plural))
	})
}

// compile-time check that the converter fits the registry.
var _ registry.Converter = (*Converter)(nil)
