package concord_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureTable checks that the package table of docs/architecture.md names
// every package of the module, once, and nothing that is not one.
func TestArchitectureTable(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9/]+)` \\|")
	var listed []string
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		listed = append(listed, m[1])
	}
	packages := modulePackages(t)
	for _, p := range packages {
		if n := countOf(listed, p); n != 1 {
			t.Errorf("package %s is listed %d times in docs/architecture.md, want once", p, n)
		}
	}
	for _, l := range listed {
		if !slices.Contains(packages, l) {
			t.Errorf("docs/architecture.md lists %s, which is not a package of the module", l)
		}
	}
}

// modulePackages returns the directories holding Go files (tests alone count only
// for a package of tests), relative to the module root, testdata and the root itself
// left out.
func modulePackages(t *testing.T) []string {
	var out []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(path) != ".go" || filepath.Dir(path) == "." {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if !slices.Contains(out, dir) {
			out = append(out, dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func countOf(list []string, s string) int {
	n := 0
	for _, l := range list {
		if l == s {
			n++
		}
	}
	return n
}

// TestArchitectureImports checks the layering docs/architecture.md states: server never
// imports the packages that assemble or extend it, wire imports nothing of Concord, and
// the storage-migration controllers are clients of the API only.
func TestArchitectureImports(t *testing.T) {
	const module = "github.com/concordproject/concord/"
	rules := []struct {
		dir       string
		forbidden []string // import path prefixes under the module; "" is all of it
	}{
		{"server", []string{"controlplane", "apiextensions", "storageversion", "flowcontrol", "migration"}},
		{"wire", []string{""}},
		{"migration", []string{"registry", "server", "storage", "etcd", "controlplane"}},
	}
	for _, p := range modulePackages(t) {
		for _, r := range rules {
			if p != r.dir && !strings.HasPrefix(p, r.dir+"/") {
				continue
			}
			for _, imp := range importsOf(t, p) {
				rel, ok := strings.CutPrefix(imp, module)
				if !ok {
					continue
				}
				for _, f := range r.forbidden {
					if f == "" || rel == f || strings.HasPrefix(rel, f+"/") {
						t.Errorf("%s imports %s", p, rel)
					}
				}
			}
		}
	}
}

// importsOf returns what the non-test files of dir import.
func importsOf(t *testing.T, dir string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			out = append(out, strings.Trim(imp.Path.Value, `"`))
		}
	}
	return out
}
