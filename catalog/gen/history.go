package main

import (
	_ "embed" // the field history
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// fieldHistory is history.json: for every Go type of the table, when each of its
// fields and enum values appeared, read from the Go source of every release of
// k8s.io/api the catalog describes (`go run ./catalog/gen -history`, which downloads
// them through the Go module proxy). It is an input of the catalog, checked in, so
// that generating the catalog needs no download; TestFieldHistoryIsCurrent fails when
// it stops at an older release than the k8s.io/api of go.mod.
type fieldHistory struct {
	// Releases are the releases read, oldest first.
	Releases []string `json:"releases"`
	// Types are keyed by "<import path>.<type name>".
	Types map[string]typeHistory `json:"types"`
}

// typeHistory is one type's: Since is the first release whose source has the type;
// Fields the fields that appeared after it (path → release); EnumValues the enum
// values that appeared after their field (path → value → release). Only what the
// newest release still has is recorded, each at the start of its latest run.
type typeHistory struct {
	Since      string                       `json:"since"`
	Fields     map[string]string            `json:"fields,omitempty"`
	EnumValues map[string]map[string]string `json:"enumValues,omitempty"`
}

//go:embed history.json
var historyJSON []byte

// loadHistory decodes the embedded history.
func loadHistory() (*fieldHistory, error) {
	h := &fieldHistory{}
	if err := json.Unmarshal(historyJSON, h); err != nil {
		return nil, fmt.Errorf("catalog/gen/history.json: %w", err)
	}
	return h, nil
}

// writeHistory reads every release from oldestRelease to newest and writes the history
// of the table's types to out.
func writeHistory(out string, newest *version.Version) error {
	var types []reflect.Type
	for _, rs := range resources {
		for _, vs := range rs.versions {
			// The types of k8s.io/api only: the catalog's others (kube-aggregator's
			// APIService) have no history, their fields being as old as they are.
			if vs.obj != nil && strings.HasPrefix(reflect.TypeOf(vs.obj).Elem().PkgPath(), "k8s.io/api/") {
				types = append(types, reflect.TypeOf(vs.obj).Elem())
			}
		}
	}
	h := &fieldHistory{Types: map[string]typeHistory{}}
	var shapes []map[string]*shape // per release, by type key
	for r := version.MustParseGeneric(oldestRelease); !r.GreaterThan(newest); r = r.AddMinor(1) {
		dir, err := downloadAPI(r)
		if err != nil {
			return err
		}
		idx := newSourceIndex(func(path string) string {
			if !strings.HasPrefix(path, "k8s.io/api/") {
				return ""
			}
			return filepath.Join(dir, strings.TrimPrefix(path, "k8s.io/api/"))
		})
		byType := map[string]*shape{}
		for _, t := range types {
			if d, err := idx.lookup(t.PkgPath(), t.Name()); err != nil || d == nil {
				continue // not in this release (a package or type added later)
			}
			s, err := idx.shapeOf(t)
			if err != nil {
				return fmt.Errorf("release %s: %w", r, err)
			}
			byType[typeKey(t)] = s
		}
		h.Releases = append(h.Releases, r.String())
		shapes = append(shapes, byType)
		fmt.Fprintf(os.Stderr, "read k8s.io/api of release %s: %d types\n", r, len(byType))
	}
	for _, t := range types {
		if th, ok := historyOf(typeKey(t), h.Releases, shapes); ok {
			h.Types[typeKey(t)] = th
		}
	}
	data, err := json.MarshalIndent(h, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(data, '\n'), 0o644)
}

// historyOf derives one type's history from its shape in each release.
func historyOf(key string, releases []string, shapes []map[string]*shape) (typeHistory, bool) {
	newest := shapes[len(shapes)-1][key]
	if newest == nil {
		return typeHistory{}, false
	}
	first := slices.IndexFunc(shapes, func(s map[string]*shape) bool { return s[key] != nil })
	th := typeHistory{Since: releases[first], Fields: map[string]string{}, EnumValues: map[string]map[string]string{}}
	// since returns the first release of the run, ending at the newest, in which has
	// holds; "" if it holds since the type's first release.
	since := func(has func(*shape) bool) string {
		i := len(shapes) - 1
		for i > first && shapes[i-1][key] != nil && has(shapes[i-1][key]) {
			i--
		}
		if i == first {
			return ""
		}
		return releases[i]
	}
	for path := range newest.fields {
		if r := since(func(s *shape) bool { return s.fields[path] }); r != "" {
			th.Fields[path] = r
		}
	}
	for path := range newest.enums {
		fieldSince := since(func(s *shape) bool { return s.fields[path] })
		for _, v := range newest.values[path] {
			r := since(func(s *shape) bool { return slices.Contains(s.values[path], v) })
			if r != "" && r != fieldSince {
				if th.EnumValues[path] == nil {
					th.EnumValues[path] = map[string]string{}
				}
				th.EnumValues[path][v] = r
			}
		}
	}
	return th, true
}

// typeKey names a Go type in the history.
func typeKey(t reflect.Type) string { return t.PkgPath() + "." + t.Name() }

// downloadAPI returns the source directory of k8s.io/api of release r (v0.<minor>.0),
// downloading it through the Go module proxy if the module cache lacks it.
func downloadAPI(r *version.Version) (string, error) {
	mod := fmt.Sprintf("k8s.io/api@v0.%d.0", r.Minor())
	out, err := exec.Command("go", "mod", "download", "-json", mod).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s: %w", mod, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("go mod download %s: %w", mod, err)
	}
	if info.Dir == "" {
		return "", fmt.Errorf("go mod download %s: %s", mod, info.Error)
	}
	return info.Dir, nil
}
