package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/concordproject/concord/catalog"
)

// addEnums sets, in the schema s of Go type t, the enum of every field whose type is
// marked +enum: the values of the type's constants in the source of this build's
// k8s.io/api, as Kubernetes' OpenAPI lists them, and "" where it stands for the field
// unset (an optional field that is not a pointer).
func addEnums(idx *sourceIndex, s *apiextensionsv1.JSONSchemaProps, t reflect.Type) error {
	sh, err := idx.shapeOf(t)
	if err != nil {
		return err
	}
	for _, path := range slices.Sorted(maps.Keys(sh.enums)) {
		values := slices.Sorted(slices.Values(sh.values[path]))
		if sh.blankable[path] && !slices.Contains(values, "") {
			values = append([]string{""}, values...) // the field unset
		}
		found := catalog.UpdateSchemaAt(s, path, func(at *apiextensionsv1.JSONSchemaProps) {
			if len(values) == 0 || at.Type != "string" {
				return
			}
			at.Enum = nil
			for _, v := range values {
				raw, _ := json.Marshal(v)
				at.Enum = append(at.Enum, apiextensionsv1.JSON{Raw: raw})
			}
		})
		if !found {
			return fmt.Errorf("%s: enum field %s is not in the schema", typeKey(t), path)
		}
	}
	return nil
}

// versionFields returns the fields and enum values of th introduced after a version's
// own introduction, for its catalog Version.
func versionFields(th typeHistory, introduced *version.Version) (map[string]*version.Version, map[string]map[string]*version.Version) {
	after := func(s string) *version.Version {
		r := version.MustParseGeneric(s)
		if introduced != nil && !r.GreaterThan(introduced) {
			return nil
		}
		return r
	}
	var fields map[string]*version.Version
	for path, s := range th.Fields {
		if strings.HasSuffix(path, ".[]") || strings.HasSuffix(path, ".{}") {
			continue // a list's items come with the list
		}
		if ps, ok := th.Fields[catalog.ParentField(path)]; ok && ps == s {
			continue // a field of a struct that came with it
		}
		if r := after(s); r != nil {
			if fields == nil {
				fields = map[string]*version.Version{}
			}
			fields[path] = r
		}
	}
	var enums map[string]map[string]*version.Version
	for path, values := range th.EnumValues {
		for value, s := range values {
			if r := after(s); r != nil {
				if enums == nil {
					enums = map[string]map[string]*version.Version{}
				}
				if enums[path] == nil {
					enums[path] = map[string]*version.Version{}
				}
				enums[path][value] = r
			}
		}
	}
	return fields, enums
}
