package concord_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

// layersOf reads the layer table of docs/architecture.md: each package's layer,
// numbered from 1; packages under test/ are in the layer that says so.
func layersOf(t *testing.T, doc string) (layer map[string]int, tests int) {
	t.Helper()
	row := regexp.MustCompile(`(?m)^\| ([0-9]+)\. [^|]+\| (.+) \|$`)
	layer = map[string]int{}
	for _, m := range row.FindAllStringSubmatch(doc, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(m[2], "under `test/`") {
			tests = n
			continue
		}
		for _, p := range quoted(m[2]) {
			if _, dup := layer[p]; dup {
				t.Errorf("docs/architecture.md puts %s in two layers", p)
			}
			layer[p] = n
		}
	}
	if len(layer) == 0 || tests == 0 {
		t.Fatal("docs/architecture.md has no layer table, or no layer of tests")
	}
	return layer, tests
}

// quoted returns the back-quoted names in s.
func quoted(s string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// bullet returns the back-quoted names of the bullet of docs/architecture.md that
// begins with start.
func bullet(t *testing.T, doc, start string) []string {
	t.Helper()
	i := strings.Index(doc, "\n- "+start)
	if i < 0 {
		t.Fatalf("docs/architecture.md has no bullet %q", start)
	}
	text := doc[i+1:]
	if j := strings.Index(text[1:], "\n- "); j >= 0 {
		text = text[:j+1]
	}
	if j := strings.Index(text, "\n\n"); j >= 0 {
		text = text[:j]
	}
	return quoted(text)
}

// TestArchitectureLayers checks the rules of docs/architecture.md's layers: every
// package is in one layer and imports nothing of a later one; the leaves import no
// package of the module, the packages one step above them only leaves; only the packages it names import etcd's client; the
// storage-migration packages are clients of the API only.
func TestArchitectureLayers(t *testing.T) {
	const module = "github.com/concordproject/concord/"
	data, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	layer, tests := layersOf(t, doc)
	layerOf := func(p string) int {
		if strings.HasPrefix(p, "test/") {
			return tests
		}
		return layer[p]
	}
	leaves := bullet(t, doc, "Leaves import no package")
	nearLeaves := bullet(t, doc, "One step above them, importing leaves only")
	etcdImporters := bullet(t, doc, "etcd's client")
	migrationForbidden := bullet(t, doc, "migration's packages")
	for _, p := range modulePackages(t) {
		if layerOf(p) == 0 {
			t.Errorf("package %s is in no layer of docs/architecture.md", p)
			continue
		}
		for _, imp := range importsOf(t, p) {
			if strings.HasPrefix(imp, "go.etcd.io/etcd/") && !slices.Contains(etcdImporters, p) && layerOf(p) != tests {
				t.Errorf("%s imports etcd's client (%s)", p, imp)
			}
			rel, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			switch {
			case layerOf(rel) > layerOf(p):
				t.Errorf("%s (layer %d) imports %s (layer %d)", p, layerOf(p), rel, layerOf(rel))
			case slices.Contains(leaves, p):
				t.Errorf("%s is a leaf but imports %s", p, rel)
			case slices.Contains(nearLeaves, p) && !slices.Contains(leaves, rel):
				t.Errorf("%s imports leaves only, but imports %s", p, rel)
			case (p == "migration" || strings.HasPrefix(p, "migration/")) && slices.Contains(migrationForbidden, rel):
				t.Errorf("%s is a client of the API but imports %s", p, rel)
			}
		}
	}
}

// importsOf returns what the non-test files of dir import, each once.
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
	slices.Sort(out)
	return slices.Compact(out)
}

// TestNoSleepsOrTickers checks that code waits on conditions, not on the clock:
// outside tests, the reconcile runtime and the retry helper, no time.Sleep, and a
// ticker or a time.After only under a comment that says which timer it is (a
// protocol's, a period's, a deadline's), never a retry.
func TestNoSleepsOrTickers(t *testing.T) {
	timer := regexp.MustCompile(`(?i)//.*\btimer\b`)
	for _, p := range modulePackages(t) {
		if strings.HasPrefix(p, "test/") || p == "reconcile" || p == "retry" {
			continue
		}
		files, err := filepath.Glob(filepath.Join(p, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(data), "\n")
			for i, line := range lines {
				switch {
				case strings.Contains(line, "time.Sleep("):
					t.Errorf("%s:%d sleeps", f, i+1)
				case strings.Contains(line, "time.NewTicker(") || strings.Contains(line, "time.Tick(") || strings.Contains(line, "time.After("):
					if !slices.ContainsFunc(lines[max(0, i-3):i], timer.MatchString) {
						t.Errorf("%s:%d starts a ticker or timer with no comment above saying which timer it is", f, i+1)
					}
				}
			}
		}
	}
}

// TestCompositionRootStaysThin checks the size docs/architecture.md gives package
// controlplane, which composes and holds no behaviour: under 1,000 lines in all, no
// file over 250. A feature's wiring that makes it grow belongs in the feature.
func TestCompositionRootStaysThin(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("controlplane", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(data), "\n")
		if n > 250 {
			t.Errorf("%s has %d lines, more than 250", f, n)
		}
		total += n
	}
	if total >= 1000 {
		t.Errorf("package controlplane has %d lines, want under 1,000", total)
	}
}
