package catalog

import (
	"fmt"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
)

// versionName matches Kubernetes API version names: v1, v2beta1, v1alpha3.
var versionName = regexp.MustCompile(`^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$`)

// validate checks the whole catalog and returns every problem found.
func (c *Catalog) validate() field.ErrorList {
	errs := validateReleases(c.releases, field.NewPath("releases"))
	if len(errs) > 0 {
		// Every other check compares against the releases.
		return errs
	}
	newest := c.releases[len(c.releases)-1]

	resPath := field.NewPath("resources")
	seenResource := map[schema.GroupResource]bool{}
	seenKind := map[schema.GroupKind]bool{}
	for _, r := range c.resources {
		p := resPath.Key(r.GroupResource().String())
		if r.Group != "" {
			for _, msg := range validation.IsDNS1123Subdomain(r.Group) {
				errs = append(errs, field.Invalid(p.Child("group"), r.Group, msg))
			}
		}
		if r.Names.Plural == "" {
			errs = append(errs, field.Required(p.Child("plural"), ""))
		} else {
			for _, msg := range validation.IsDNS1035Label(r.Names.Plural) {
				errs = append(errs, field.Invalid(p.Child("plural"), r.Names.Plural, msg))
			}
		}
		if r.Names.Kind == "" {
			errs = append(errs, field.Required(p.Child("kind"), ""))
		}
		gr, gk := r.GroupResource(), schema.GroupKind{Group: r.Group, Kind: r.Names.Kind}
		if seenResource[gr] {
			errs = append(errs, field.Duplicate(p, gr.String()))
		}
		if r.Names.Kind != "" && seenKind[gk] {
			errs = append(errs, field.Duplicate(p.Child("kind"), r.Names.Kind))
		}
		seenResource[gr], seenKind[gk] = true, true
		errs = append(errs, validateVersions(r, newest, p.Child("versions"))...)
	}

	gatePath := field.NewPath("featureGates")
	for _, name := range sortedKeys(c.gates) {
		errs = append(errs, validateGate(name, c.gates[name], newest, gatePath.Key(string(name)))...)
	}
	return errs
}

// validateReleases checks that releases are major.minor and strictly increasing.
func validateReleases(releases []*version.Version, p *field.Path) field.ErrorList {
	if len(releases) == 0 {
		return field.ErrorList{field.Required(p, "a catalog describes at least one release")}
	}
	var errs field.ErrorList
	for i, r := range releases {
		if err := checkRelease(r); err != nil {
			errs = append(errs, field.Invalid(p.Index(i), fmt.Sprint(r), err.Error()))
			continue
		}
		if i > 0 && releases[i-1] != nil && !r.GreaterThan(releases[i-1]) {
			errs = append(errs, field.Invalid(p.Index(i), r.String(), fmt.Sprintf("releases must be strictly increasing, but %s follows %s", r, releases[i-1])))
		}
	}
	return errs
}

// checkRelease checks that v is a major.minor release.
func checkRelease(v *version.Version) error {
	switch {
	case v == nil:
		return fmt.Errorf("must be set")
	case len(v.Components()) != 2 || v.PreRelease() != "" || v.BuildMetadata() != "":
		return fmt.Errorf("must be a release as major.minor, such as 1.30")
	}
	return nil
}

// validateVersions checks a resource's versions and their lifecycles against the
// newest release the catalog describes.
func validateVersions(r *Resource, newest *version.Version, p *field.Path) field.ErrorList {
	if len(r.Versions) == 0 {
		return field.ErrorList{field.Required(p, "a resource needs at least one version")}
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	for _, v := range r.Versions {
		vp := p.Key(v.Name)
		switch {
		case !versionName.MatchString(v.Name):
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, "must be a Kubernetes API version such as v1, v2beta1 or v1alpha1"))
		case seen[v.Name]:
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
		}
		seen[v.Name] = true

		l := v.Lifecycle
		for _, ev := range []struct {
			name string
			v    *version.Version
		}{{"introduced", l.Introduced}, {"deprecated", l.Deprecated}, {"removed", l.Removed}} {
			if ev.v != nil {
				if err := checkRelease(ev.v); err != nil {
					errs = append(errs, field.Invalid(vp.Child(ev.name), ev.v.String(), err.Error()))
				}
			}
		}
		if l.Introduced == nil {
			errs = append(errs, field.Required(vp.Child("introduced"), ""))
			continue
		}
		errs = append(errs, validateFields(&v, newest, vp)...)
		if l.Introduced.GreaterThan(newest) {
			errs = append(errs, field.Invalid(vp.Child("introduced"), l.Introduced.String(), fmt.Sprintf("is after the newest release of the catalog (%s)", newest)))
		}
		if l.Deprecated != nil {
			if l.Deprecated.LessThan(l.Introduced) {
				errs = append(errs, field.Invalid(vp.Child("deprecated"), l.Deprecated.String(), fmt.Sprintf("must not be before introduced (%s)", l.Introduced)))
			}
			if l.Deprecated.GreaterThan(newest) {
				errs = append(errs, field.Invalid(vp.Child("deprecated"), l.Deprecated.String(), fmt.Sprintf("is after the newest release of the catalog (%s): a build cannot know a later deprecation", newest)))
			}
		}
		if l.Removed != nil {
			if !l.Removed.GreaterThan(l.Introduced) {
				errs = append(errs, field.Invalid(vp.Child("removed"), l.Removed.String(), fmt.Sprintf("must be after introduced (%s)", l.Introduced)))
			}
			if l.Deprecated != nil && l.Removed.LessThan(l.Deprecated) {
				errs = append(errs, field.Invalid(vp.Child("removed"), l.Removed.String(), fmt.Sprintf("must not be before deprecated (%s)", l.Deprecated)))
			}
			if l.Removed.GreaterThan(newest) && l.Deprecated == nil {
				errs = append(errs, field.Invalid(vp.Child("removed"), l.Removed.String(), fmt.Sprintf("is after the newest release of the catalog (%s): a planned removal needs a deprecation", newest)))
			}
		}
		if v.Replacement != "" {
			switch {
			case l.Deprecated == nil:
				errs = append(errs, field.Invalid(vp.Child("replacement"), v.Replacement, "only a deprecated version has a replacement"))
			case v.Replacement == v.Name || !slices.ContainsFunc(r.Versions, func(o Version) bool { return o.Name == v.Replacement }):
				errs = append(errs, field.Invalid(vp.Child("replacement"), v.Replacement, "must name another version of the resource"))
			}
		}
		if v.Schema != nil && v.Schema.Type != "object" {
			errs = append(errs, field.Invalid(vp.Child("schema", "type"), v.Schema.Type, `the schema of a whole object must have type "object"`))
		}
	}
	return errs
}

// validateGate checks one feature gate's specs: releases known to the catalog, and the
// rules component-base's feature gates enforce (order, no regression, terminal
// deprecation, locks), by registering them with a scratch gate.
func validateGate(name featuregate.Feature, specs featuregate.VersionedSpecs, newest *version.Version, p *field.Path) field.ErrorList {
	if name == "" || name == "AllAlpha" || name == "AllBeta" {
		return field.ErrorList{field.Invalid(p, string(name), "is not a name a feature gate may have")}
	}
	if len(specs) == 0 {
		return field.ErrorList{field.Required(p, "a feature gate needs at least one spec")}
	}
	var errs field.ErrorList
	for i, s := range specs {
		if s.Version == nil {
			errs = append(errs, field.Required(p.Index(i).Child("version"), ""))
			continue
		}
		if s.Version.GreaterThan(newest) {
			errs = append(errs, field.Invalid(p.Index(i).Child("version"), s.Version.String(), fmt.Sprintf("is after the newest release of the catalog (%s)", newest)))
		}
		switch s.PreRelease {
		case featuregate.Alpha, featuregate.Beta, featuregate.GA, featuregate.Deprecated:
		default:
			errs = append(errs, field.NotSupported(p.Index(i).Child("preRelease"), string(s.PreRelease), preReleaseNames))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if err := featuregate.NewVersionedFeatureGate(newest).AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{name: specs}); err != nil {
		errs = append(errs, field.Invalid(p, string(name), err.Error()))
	}
	return errs
}
