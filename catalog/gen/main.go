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
// gates are Concord's own plus a few upstream ones (features.go).
//
// The output is deterministic; catalog/gen's test fails when default.json is stale.
package main

import (
	"flag"
	"fmt"
	"os"
	"reflect"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/concordproject/concord/catalog"
)

func main() {
	out := flag.String("o", "catalog/default.json", "file to write the catalog to")
	flag.Parse()
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

	b := newSchemaBuilder()
	var out []catalog.Resource
	for _, rs := range specs {
		r, err := buildResource(b, rs, newest)
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

// buildResource builds one resource: names, lifecycles and schemas.
func buildResource(b *schemaBuilder, rs resourceSpec, newest *version.Version) (catalog.Resource, error) {
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
		if err != nil {
			return r, fmt.Errorf("%s/%s %s: %w", rs.group, rs.plural, vs.name, err)
		}
		schemas[vs.name] = s
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
		r.Versions = append(r.Versions, catalog.Version{
			Name:        vs.name,
			Lifecycle:   lifecycles[vs.name],
			Replacement: replacements[vs.name],
			Schema:      s,
		})
	}
	return r, nil
}
