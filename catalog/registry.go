package catalog

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/concordproject/concord/registry"
	objectschema "github.com/concordproject/concord/schema"
)

// Selection is a decision about one resource, made elsewhere (by the compatibility
// package, from the emulation and minimum compatibility versions): which versions are
// served, which one objects are stored in, and at which release deprecations apply.
type Selection struct {
	// Served reports whether a version is served over the REST API. Nil serves none
	// (every version stays decodable).
	Served func(v *Version) bool
	// StorageVersion names the version objects are written in; it must be a version of
	// the resource.
	StorageVersion string
	// At is the release whose deprecations apply (normally the emulation version):
	// versions deprecated at or before it are served with a deprecation warning. Nil
	// marks none deprecated.
	At *version.Version
	// MinCompatibility is the oldest release the server's data must stay readable by:
	// the fields it lacks are the versions' registry.NewFields, the enum values it
	// lacks are not accepted (nil: every field and value is writable).
	MinCompatibility *version.Version
}

// RegistryResource builds the registry.Resource of r for the decision sel: every catalog
// version, with its schema (less the enum values sel's minimum compatibility release
// lacks) and the fields that release lacks as NewFields, the resource's subresources
// and printer columns, the Served flags and deprecation warnings sel gives, sel's
// storage version, and a Converter for r. The versions' schemas, and their compiled
// forms, are shared with every other result for the same minimum compatibility
// release (a server of a release does not pay for copying or compiling them again),
// and the schemas of Default's catalog are compiled when first used, not here (an
// error for a schema of another catalog that does not compile): they must not be
// changed. Nothing else is shared with the catalog, and the result
// has no Hooks: the caller adds the resource's behaviour, if any. An unknown storage
// version wraps ErrUnknownVersion.
func (r *Resource) RegistryResource(sel Selection) (*registry.Resource, error) {
	if r.Version(sel.StorageVersion) == nil {
		return nil, fmt.Errorf("%w: resource %s has no version %q to store objects in", ErrUnknownVersion, r.GroupResource(), sel.StorageVersion)
	}
	out := &registry.Resource{
		Group:          r.Group,
		Names:          *r.Names.DeepCopy(),
		Namespaced:     r.Namespaced,
		StorageVersion: sel.StorageVersion,
		Converter:      converterOf(r),
	}
	for i := range r.Versions {
		v := &r.Versions[i]
		w := v.writableOf(sel.MinCompatibility, r.apiVersion(v.Name))
		rv := registry.Version{
			Name:         v.Name,
			Served:       sel.Served != nil && sel.Served(v),
			Schema:       w.schema,
			Subresources: r.Subresources.DeepCopy(),
			NewFields:    slices.Clone(w.newFields),
		}
		if w.schema != nil {
			compiled, err := r.compiled(w)
			if err != nil {
				return nil, fmt.Errorf("resource %s version %s: %w", r.GroupResource(), v.Name, err)
			}
			rv.Compiled = compiled
		}
		for _, c := range r.PrinterColumns {
			rv.PrinterColumns = append(rv.PrinterColumns, *c.DeepCopy())
		}
		if sel.At != nil && v.DeprecatedAt(sel.At) {
			warning := r.deprecationWarning(v)
			rv.Deprecated, rv.DeprecationWarning = true, &warning
		}
		out.Versions = append(out.Versions, rv)
	}
	if verbs, err := RecordedVerbs(); err != nil {
		return nil, fmt.Errorf("the recorded verbs of kube-apiserver: %w", err)
	} else if v, ok := verbs.Of(r.GroupResource()); ok {
		out.Verbs, out.SubresourceVerbs = slices.Clone(v.Verbs), maps.Clone(v.Subresources)
	}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return out, nil
}

// compiled is the registry.Version.Compiled of w (which compiles once): compiled on
// first use for a resource of Default's catalog, else compiled now (an error if it
// does not compile).
func (r *Resource) compiled(w writableVersion) (func() (*objectschema.Schema, error), error) {
	if !r.compileOnUse {
		if _, err := w.compile(); err != nil {
			return nil, err
		}
	}
	return w.compile, nil
}

// deprecationWarning is the Warning header text for a deprecated version, in the words
// kube-apiserver uses: "batch/v1beta1 CronJob is deprecated in v1.21+, unavailable in
// v1.25+; use batch/v1 CronJob".
func (r *Resource) deprecationWarning(v *Version) string {
	gv := r.apiVersion(v.Name)
	msg := fmt.Sprintf("%s %s is deprecated in v%s+", gv, r.Names.Kind, v.Deprecated)
	if v.Removed != nil {
		msg += fmt.Sprintf(", unavailable in v%s+", v.Removed)
	}
	if v.Replacement != "" {
		msg += fmt.Sprintf("; use %s %s", r.apiVersion(v.Replacement), r.Names.Kind)
	}
	return msg
}

// apiVersion returns the apiVersion string of the named version of r.
func (r *Resource) apiVersion(v string) string {
	if r.Group == "" {
		return v
	}
	return r.Group + "/" + v
}
