// Command gen writes Concord's default API catalog, catalog/default.json, from the Go
// types of k8s.io/api:
//
//	go run ./catalog/gen              # from the module root
//	go generate ./catalog             # the same, through catalog/default.go
//
// The resources and versions to include are the table in table.go. For each version the
// generator reads the release history from the type's APILifecycle* methods and derives
// the schema from the type by reflection (see schema.go); versions whose types k8s.io/api
// has deleted carry a short, sourced history and reuse a surviving version's schema. The
// releases run from oldestRelease to the release of the k8s.io/api module in go.mod, so
// bumping k8s.io/api and running the generator moves the catalog forward. The feature
// gates are Concord's own plus a few upstream ones (features.go). Enums come from the
// +enum types' constants in the source of this build's k8s.io/api; when each field and
// enum value was introduced comes from history.json, which
//
//	go run ./catalog/gen -history catalog/gen/history.json
//
// writes by reading the source of every release of k8s.io/api (downloaded through the
// Go module proxy): run it after bumping k8s.io/api (the generator refuses a history
// that stops before the module's release).
//
// The output is deterministic; catalog/gen's test fails when default.json is stale.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/concordproject/concord/catalog"
)

func main() {
	out := flag.String("o", "catalog/default.json", "file to write the catalog to")
	history := flag.String("history", "", "instead, read every release of k8s.io/api the catalog describes (downloading them) and write the field history to this file (catalog/gen/history.json)")
	flag.Parse()
	run := run
	if *history != "" {
		out, run = history, func(out string) error {
			newest, err := apiModuleRelease()
			if err != nil {
				return err
			}
			return writeHistory(out, newest)
		}
	}
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	data, err := generate()
	if err != nil {
		return err
	}
	return os.WriteFile(out, data, 0o644)
}

// generate returns the encoded default catalog.
func generate() ([]byte, error) {
	c, err := buildCatalog(resources)
	if err != nil {
		return nil, err
	}
	return c.Encode()
}

// buildCatalog builds the catalog of the given resources.
func buildCatalog(specs []resourceSpec) (*catalog.Catalog, error) {
	newest, err := apiModuleRelease()
	if err != nil {
		return nil, err
	}
	oldest := version.MustParseGeneric(oldestRelease)
	var releases []*version.Version
	for r := oldest; !r.GreaterThan(newest); r = r.AddMinor(1) {
		releases = append(releases, r)
	}

	hist, err := loadHistory()
	if err != nil {
		return nil, err
	}
	if n := len(hist.Releases); n == 0 || hist.Releases[n-1] != newest.String() {
		return nil, fmt.Errorf("%w: it ends at %v, k8s.io/api is release %s: run `go run ./catalog/gen -history catalog/gen/history.json`", errStaleHistory, hist.Releases, newest)
	}
	sources, err := dependencySources()
	if err != nil {
		return nil, err
	}
	g := &builder{schemas: newSchemaBuilder(), history: hist,
		source: newSourceIndex(func(path string) string { return sources[path].dir })}
	var out []catalog.Resource
	for _, rs := range specs {
		r, err := g.resource(rs, newest)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	gates, err := featureGates()
	if err != nil {
		return nil, err
	}
	return catalog.New(releases, out, gates)
}

// errStaleHistory means that history.json does not reach the release of k8s.io/api.
var errStaleHistory = errors.New("catalog/gen/history.json is stale")

// builder builds the catalog's resources: schemas by reflection, enums from the
// source of this build's k8s.io/api, fields' and enum values' introductions from the
// history.
type builder struct {
	schemas *schemaBuilder
	source  *sourceIndex
	history *fieldHistory
}

// resource builds one resource: names, lifecycles, schemas and field histories.
func (g *builder) resource(rs resourceSpec, newest *version.Version) (catalog.Resource, error) {
	b := g.schemas
	r := catalog.Resource{
		Group:          rs.group,
		Namespaced:     rs.namespaced,
		PrinterColumns: rs.columns,
		Names: apiextensionsv1.CustomResourceDefinitionNames{
			Plural:     rs.plural,
			ShortNames: rs.shortNames,
			Categories: rs.categories,
		},
	}
	schemas := map[string]*apiextensionsv1.JSONSchemaProps{}
	types := map[string]reflect.Type{}
	for _, vs := range rs.versions {
		if vs.obj == nil {
			continue
		}
		t := reflect.TypeOf(vs.obj).Elem()
		switch {
		case r.Names.Kind == "":
			r.Names.Kind = t.Name()
		case r.Names.Kind != t.Name():
			return r, fmt.Errorf("%s/%s %s: kind %s, but other versions are %s", rs.group, rs.plural, vs.name, t.Name(), r.Names.Kind)
		}
		s, err := b.object(t)
		if err == nil {
			err = addEnums(g.source, s, t)
		}
		if err != nil {
			return r, fmt.Errorf("%s/%s %s: %w", rs.group, rs.plural, vs.name, err)
		}
		schemas[vs.name] = s
		types[vs.name] = t
	}
	if r.Names.Kind == "" {
		return r, fmt.Errorf("%s/%s: no version has a Go type to name its kind", rs.group, rs.plural)
	}

	lifecycles, replacements, err := lifecycles(rs, r.Names.Kind, newest)
	if err != nil {
		return r, err
	}
	for _, vs := range rs.versions {
		s := schemas[vs.name]
		if vs.obj == nil {
			from, ok := schemas[vs.schemaOf]
			if !ok {
				return r, fmt.Errorf("%s/%s %s: no Go type, and schemaOf %q names no version that has one", rs.group, rs.plural, vs.name, vs.schemaOf)
			}
			s = from.DeepCopy()
		}
		if _, ok := s.Properties["status"]; ok {
			r.Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}, Scale: rs.scale}
		}
		t := types[vs.name]
		if vs.obj == nil {
			t = types[vs.schemaOf]
		}
		th, ok := g.history.Types[typeKey(t)]
		if !ok && strings.HasPrefix(t.PkgPath(), "k8s.io/api/") {
			return r, fmt.Errorf("%w: it lacks %s: run `go run ./catalog/gen -history catalog/gen/history.json`", errStaleHistory, typeKey(t))
		}
		fields, enums := versionFields(th, lifecycles[vs.name].Introduced)
		r.Versions = append(r.Versions, catalog.Version{
			Name:        vs.name,
			Lifecycle:   lifecycles[vs.name],
			Replacement: replacements[vs.name],
			Schema:      s,
			Fields:      fields,
			EnumValues:  enums,
		})
	}
	return r, nil
}
