package differential

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// seed is one valid object of a served resource, from testdata/seeds.
type seed struct {
	// id is the file's stem and the object's original name: stable across runs.
	id  string
	res resource
	obj map[string]any
}

var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// loadSeeds reads every object of testdata/seeds whose kind kube-apiserver serves
// (the items of a List too), in file and document order.
func loadSeeds() ([]seed, error) {
	files, err := filepath.Glob(filepath.Join("testdata", "seeds", "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []seed
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		stem := strings.TrimSuffix(filepath.Base(f), ".yaml")
		if _, after, ok := strings.Cut(stem, "__"); ok {
			stem = after
		}
		for i, doc := range docSeparator.Split(string(data), -1) {
			objs, err := decodeDoc([]byte(doc))
			if err != nil {
				return nil, fmt.Errorf("%s document %d: %w", f, i, err)
			}
			for j, obj := range objs {
				s, ok := newSeed(stem, obj, fmt.Sprintf("%d-%d", i, j))
				if !ok {
					continue
				}
				for n := 2; seen[s.id]; n++ {
					s.id = fmt.Sprintf("%s/%s-%d", stem, name(obj, fmt.Sprint(i)), n)
				}
				seen[s.id] = true
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// decodeDoc decodes one YAML document into its objects: none for an empty one, the
// items of a List.
func decodeDoc(doc []byte) ([]map[string]any, error) {
	if len(bytes.TrimSpace(stripComments(doc))) == 0 {
		return nil, nil
	}
	var obj map[string]any
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, nil
	}
	if kind, _ := obj["kind"].(string); !strings.HasSuffix(kind, "List") {
		return []map[string]any{obj}, nil
	}
	items, _ := obj["items"].([]any)
	var out []map[string]any
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out, nil
}

func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(append(out, line...), '\n')
		}
	}
	return out
}

func newSeed(stem string, obj map[string]any, fallback string) (seed, bool) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	res, ok := byKind(apiVersion, kind)
	if !ok || res.verbs == readOnly || kind == "Binding" {
		return seed{}, false
	}
	return seed{id: stem + "/" + name(obj, fallback), res: res, obj: obj}, true
}

// name is an object's name, or its generateName, or fallback.
func name(obj map[string]any, fallback string) string {
	meta, _ := obj["metadata"].(map[string]any)
	for _, k := range []string{"name", "generateName"} {
		if s, _ := meta[k].(string); s != "" {
			return strings.TrimSuffix(s, "-")
		}
	}
	return fallback
}
