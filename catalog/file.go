package catalog

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The file format. Versions are "major.minor" strings; feature gate stages are ALPHA,
// BETA, GA ("" is accepted for GA, as component-base spells it) and DEPRECATED.

type fileCatalog struct {
	Releases     []string                     `json:"releases"`
	Groups       []fileGroup                  `json:"groups"`
	FeatureGates map[string][]fileFeatureSpec `json:"featureGates,omitempty"`
}

type fileGroup struct {
	// Name is the API group; "" is the core group.
	Name      string         `json:"name"`
	Resources []fileResource `json:"resources"`
}

type fileResource struct {
	Plural         string                                           `json:"plural"`
	Singular       string                                           `json:"singular,omitempty"`
	Kind           string                                           `json:"kind"`
	ListKind       string                                           `json:"listKind,omitempty"`
	ShortNames     []string                                         `json:"shortNames,omitempty"`
	Categories     []string                                         `json:"categories,omitempty"`
	Namespaced     bool                                             `json:"namespaced"`
	Subresources   *apiextensionsv1.CustomResourceSubresources      `json:"subresources,omitempty"`
	PrinterColumns []apiextensionsv1.CustomResourceColumnDefinition `json:"printerColumns,omitempty"`
	Versions       []fileVersion                                    `json:"versions"`
}

type fileVersion struct {
	Name        string                           `json:"name"`
	Introduced  string                           `json:"introduced"`
	Deprecated  string                           `json:"deprecated,omitempty"`
	Removed     string                           `json:"removed,omitempty"`
	Replacement string                           `json:"replacement,omitempty"`
	Schema      *apiextensionsv1.JSONSchemaProps `json:"schema,omitempty"`
	// SameSchemaAs names another version of the resource whose schema this version
	// shares, instead of Schema. Encode writes it for every repeated schema, which
	// halves the default catalog and its parse time.
	SameSchemaAs string `json:"sameSchemaAs,omitempty"`
	// Fields and EnumValues are Version's, releases as "major.minor".
	Fields     map[string]string            `json:"fields,omitempty"`
	EnumValues map[string]map[string]string `json:"enumValues,omitempty"`
}

type fileFeatureSpec struct {
	Version                 string `json:"version"`
	Default                 bool   `json:"default"`
	PreRelease              string `json:"preRelease"`
	LockToDefault           bool   `json:"lockToDefault,omitempty"`
	MinCompatibilityVersion string `json:"minCompatibilityVersion,omitempty"`
}

// preReleaseNames are the stage names a catalog file may use.
var preReleaseNames = []string{"ALPHA", "BETA", "GA", "DEPRECATED"}

// Load reads and parses a catalog file (JSON or YAML). Errors name the file.
func Load(path string) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading API catalog: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Parse parses and validates a catalog in JSON or YAML. Unknown and duplicate fields
// are errors, as are unparsable releases; every error wraps ErrInvalid.
func Parse(data []byte) (*Catalog, error) {
	if trimmed := bytes.TrimSpace(data); len(trimmed) == 0 || trimmed[0] != '{' {
		j, err := yaml.YAMLToJSONStrict(data)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		data = j
	}
	// Schemas nest, and the schema types decode each nested schema by scanning its
	// bytes again: without its indentation, the default catalog decodes in 52-58 ms
	// instead of 130 (docs/benchmarks.md, stop 76).
	var compact bytes.Buffer
	compact.Grow(len(data))
	if err := json.Compact(&compact, data); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return parseCompact(compact.Bytes())
}

// parseCompact is Parse of JSON without whitespace between its tokens.
func parseCompact(data []byte) (*Catalog, error) {
	var f fileCatalog
	strict, err := sigsjson.UnmarshalStrict(data, &f)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, errors.Join(strict...))
	}
	releases, resources, gates, errs := f.model()
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, errs.ToAggregate())
	}
	return New(releases, resources, gates)
}

// model converts the file form to the arguments of New, reporting unparsable versions
// and stages and duplicate groups.
func (f *fileCatalog) model() ([]*version.Version, []Resource, map[featuregate.Feature]featuregate.VersionedSpecs, field.ErrorList) {
	m := &modelBuilder{}
	releases := m.releases(f.Releases)
	resources := m.resources(f.Groups)
	gates := m.gates(f.FeatureGates)
	return releases, resources, gates, m.errs
}

// modelBuilder collects the errors of one conversion from the file form.
type modelBuilder struct {
	errs field.ErrorList
}

// parse reads a release as major.minor; the empty string is nil.
func (m *modelBuilder) parse(p *field.Path, s string) *version.Version {
	if s == "" {
		return nil
	}
	v, err := version.ParseGeneric(s)
	if err == nil && v.String() != s {
		err = fmt.Errorf("must be a release as major.minor, such as 1.30")
	}
	if err != nil {
		m.errs = append(m.errs, field.Invalid(p, s, err.Error()))
		return nil
	}
	return v
}

func (m *modelBuilder) releases(in []string) []*version.Version {
	releases := make([]*version.Version, 0, len(in))
	for i, s := range in {
		if v := m.parse(field.NewPath("releases").Index(i), s); v != nil {
			releases = append(releases, v)
		} else if s == "" {
			m.errs = append(m.errs, field.Required(field.NewPath("releases").Index(i), ""))
		}
	}
	return releases
}

func (m *modelBuilder) resources(groups []fileGroup) []Resource {
	var resources []Resource
	seenGroup := map[string]bool{}
	for gi, g := range groups {
		gp := field.NewPath("groups").Index(gi)
		if seenGroup[g.Name] {
			m.errs = append(m.errs, field.Duplicate(gp.Child("name"), g.Name))
		}
		seenGroup[g.Name] = true
		for ri, fr := range g.Resources {
			rp := gp.Child("resources").Index(ri)
			r := Resource{
				Group: g.Name,
				Names: apiextensionsv1.CustomResourceDefinitionNames{
					Plural: fr.Plural, Singular: fr.Singular, Kind: fr.Kind, ListKind: fr.ListKind,
					ShortNames: fr.ShortNames, Categories: fr.Categories,
				},
				Namespaced:     fr.Namespaced,
				Subresources:   fr.Subresources,
				PrinterColumns: fr.PrinterColumns,
			}
			for vi, fv := range fr.Versions {
				r.Versions = append(r.Versions, m.version(rp.Child("versions").Index(vi), fv, fr.Versions))
			}
			resources = append(resources, r)
		}
	}
	return resources
}

// version converts one version of a resource; siblings are all of the resource's
// versions, for sameSchemaAs.
func (m *modelBuilder) version(vp *field.Path, fv fileVersion, siblings []fileVersion) Version {
	schema := fv.Schema
	if fv.SameSchemaAs != "" {
		schema = nil
		for _, other := range siblings {
			if other.Name == fv.SameSchemaAs && other.SameSchemaAs == "" {
				schema = other.Schema
			}
		}
		switch {
		case fv.Schema != nil:
			m.errs = append(m.errs, field.Invalid(vp.Child("sameSchemaAs"), fv.SameSchemaAs, "must not be set together with schema"))
		case schema == nil:
			m.errs = append(m.errs, field.Invalid(vp.Child("sameSchemaAs"), fv.SameSchemaAs, "must name another version of the resource that has a schema of its own"))
		}
	}
	return Version{
		Name: fv.Name,
		Lifecycle: Lifecycle{
			Introduced: m.parse(vp.Child("introduced"), fv.Introduced),
			Deprecated: m.parse(vp.Child("deprecated"), fv.Deprecated),
			Removed:    m.parse(vp.Child("removed"), fv.Removed),
		},
		Replacement: fv.Replacement,
		Schema:      schema,
		Fields:      m.releaseMap(vp.Child("fields"), fv.Fields),
		EnumValues:  m.enumValues(vp.Child("enumValues"), fv.EnumValues),
	}
}

// releaseMap parses the releases of a map of them (nil when empty).
func (m *modelBuilder) releaseMap(p *field.Path, in map[string]string) map[string]*version.Version {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]*version.Version, len(in))
	for _, k := range sortedKeys(in) {
		out[k] = m.parse(p.Key(k), in[k])
	}
	return out
}

// enumValues parses a version's enumValues (nil when empty).
func (m *modelBuilder) enumValues(p *field.Path, in map[string]map[string]string) map[string]map[string]*version.Version {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]map[string]*version.Version, len(in))
	for _, path := range sortedKeys(in) {
		out[path] = m.releaseMap(p.Key(path), in[path])
	}
	return out
}

func (m *modelBuilder) gates(in map[string][]fileFeatureSpec) map[featuregate.Feature]featuregate.VersionedSpecs {
	gates := make(map[featuregate.Feature]featuregate.VersionedSpecs, len(in))
	for _, name := range sortedKeys(in) {
		fp := field.NewPath("featureGates").Key(name)
		specs := make(featuregate.VersionedSpecs, 0, len(in[name]))
		for i, fs := range in[name] {
			sp := fp.Index(i)
			s := featuregate.FeatureSpec{
				Version:                 m.parse(sp.Child("version"), fs.Version),
				Default:                 fs.Default,
				LockToDefault:           fs.LockToDefault,
				MinCompatibilityVersion: m.parse(sp.Child("minCompatibilityVersion"), fs.MinCompatibilityVersion),
			}
			switch fs.PreRelease {
			case "ALPHA":
				s.PreRelease = featuregate.Alpha
			case "BETA":
				s.PreRelease = featuregate.Beta
			case "GA", "":
				s.PreRelease = featuregate.GA
			case "DEPRECATED":
				s.PreRelease = featuregate.Deprecated
			default:
				m.errs = append(m.errs, field.NotSupported(sp.Child("preRelease"), fs.PreRelease, preReleaseNames))
			}
			specs = append(specs, s)
		}
		gates[featuregate.Feature(name)] = specs
	}
	return gates
}

// Encode returns the catalog in its file form: indented JSON ending in a newline, with
// groups (the core group first), resources, versions and feature gates in a fixed
// order, so that equal catalogs encode to equal bytes. Parse(Encode()) gives back an
// equal catalog.
func (c *Catalog) Encode() ([]byte, error) {
	f := fileCatalog{Groups: []fileGroup{}}
	for _, r := range c.releases {
		f.Releases = append(f.Releases, r.String())
	}
	for _, r := range c.resources {
		if n := len(f.Groups); n == 0 || f.Groups[n-1].Name != r.Group {
			f.Groups = append(f.Groups, fileGroup{Name: r.Group})
		}
		fr := fileResource{
			Plural: r.Names.Plural, Singular: r.Names.Singular, Kind: r.Names.Kind, ListKind: r.Names.ListKind,
			ShortNames: r.Names.ShortNames, Categories: r.Names.Categories,
			Namespaced: r.Namespaced, Subresources: r.Subresources, PrinterColumns: r.PrinterColumns,
		}
		for i, v := range r.Versions {
			fv := fileVersion{
				Name:        v.Name,
				Introduced:  releaseString(v.Introduced),
				Deprecated:  releaseString(v.Deprecated),
				Removed:     releaseString(v.Removed),
				Replacement: v.Replacement,
				Schema:      v.Schema,
				Fields:      releaseStrings(v.Fields),
			}
			for path, values := range v.EnumValues {
				if fv.EnumValues == nil {
					fv.EnumValues = map[string]map[string]string{}
				}
				fv.EnumValues[path] = releaseStrings(values)
			}
			for _, earlier := range fr.Versions[:i] {
				if v.Schema != nil && earlier.Schema != nil && reflect.DeepEqual(v.Schema, earlier.Schema) {
					fv.Schema, fv.SameSchemaAs = nil, earlier.Name
					break
				}
			}
			fr.Versions = append(fr.Versions, fv)
		}
		g := &f.Groups[len(f.Groups)-1]
		g.Resources = append(g.Resources, fr)
	}
	if len(c.gates) > 0 {
		f.FeatureGates = map[string][]fileFeatureSpec{}
	}
	for name, specs := range c.gates {
		out := make([]fileFeatureSpec, 0, len(specs))
		for _, s := range specs {
			stage := string(s.PreRelease)
			if s.PreRelease == featuregate.GA {
				stage = "GA"
			}
			out = append(out, fileFeatureSpec{
				Version:                 releaseString(s.Version),
				Default:                 s.Default,
				PreRelease:              stage,
				LockToDefault:           s.LockToDefault,
				MinCompatibilityVersion: releaseString(s.MinCompatibilityVersion),
			})
		}
		f.FeatureGates[string(name)] = out
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&f); err != nil {
		return nil, fmt.Errorf("encoding API catalog: %w", err)
	}
	return buf.Bytes(), nil
}

// releaseStrings is the file form of a map of releases (nil when empty).
func releaseStrings(in map[string]*version.Version) map[string]string {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = releaseString(v)
	}
	return out
}

func releaseString(v *version.Version) string {
	if v == nil {
		return ""
	}
	return v.String()
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
