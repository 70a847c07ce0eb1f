package upgradecheck

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/concordproject/concord/catalog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/dynamic"
)

// NewField is a field of a version of a built-in resource that a release does not
// know: the API catalog records when it was introduced, after that release. A server
// of that release prunes it from every object it writes.
type NewField struct {
	// Version is the resource's version whose schema has the field; Path its path
	// (property names, "[]" for a list's items, "{}" for a map's values).
	Version, Path string
	// Introduced is the release that introduced it.
	Introduced string
}

// FieldUse is a NewField that persisted objects use.
type FieldUse struct {
	NewField
	// Objects is how many objects use it; Examples name the first few
	// ("namespace/name").
	Objects  int
	Examples []string
}

// maxExamples is how many objects a FieldUse names.
const maxExamples = 3

// NewFields returns, for every resource of cat, the fields of its versions that
// release to does not know, each only once (not the fields below a new field).
func NewFields(cat *catalog.Catalog, to string) (map[schema.GroupResource][]NewField, error) {
	at, err := version.ParseMajorMinor(to)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not a release: %w", ErrFlag, to, err)
	}
	out := map[schema.GroupResource][]NewField{}
	for _, r := range cat.Resources() {
		for _, v := range r.Versions {
			var paths []string
			for path, introduced := range v.Fields {
				if introduced.GreaterThan(at) {
					paths = append(paths, path)
				}
			}
			slices.Sort(paths) // a parent sorts before the fields below it
			var kept []string
			for _, p := range paths {
				if !slices.ContainsFunc(kept, func(parent string) bool { return strings.HasPrefix(p, parent+".") }) {
					kept = append(kept, p)
					out[r.GroupResource()] = append(out[r.GroupResource()], NewField{Version: v.Name, Path: p, Introduced: v.Fields[p].String()})
				}
			}
		}
	}
	return out, nil
}

// ScanFields reads every object of each resource that has new fields, in the version
// whose schema has them (a page of 500 at a time, so that a large cluster is read in
// bounded memory; progress, if not nil, hears of every 10,000 objects), and returns
// the fields they use. A version the cluster does not serve is skipped: its fields
// cannot be in its objects as the cluster serves them.
func ScanFields(ctx context.Context, dyn dynamic.Interface, fields map[schema.GroupResource][]NewField, progress io.Writer) (map[schema.GroupResource][]FieldUse, error) {
	out := map[schema.GroupResource][]FieldUse{}
	for gr, nf := range fields {
		byVersion := map[string][]NewField{}
		for _, f := range nf {
			byVersion[f.Version] = append(byVersion[f.Version], f)
		}
		for v, fs := range byVersion {
			uses, err := scanVersion(ctx, dyn, gr.WithVersion(v), fs, progress)
			if err != nil {
				return nil, err
			}
			out[gr] = append(out[gr], uses...)
		}
		if len(out[gr]) == 0 {
			delete(out, gr)
		}
	}
	return out, nil
}

// scanVersion lists the objects of gvr and counts, for each of fields, the objects
// that use it.
func scanVersion(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, fields []NewField, progress io.Writer) ([]FieldUse, error) {
	uses, paths := make([]FieldUse, len(fields)), make([][]string, len(fields))
	for i, f := range fields {
		uses[i].NewField, paths[i] = f, splitPath(f.Path)
	}
	read := 0
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := dyn.Resource(gvr).List(ctx, opts)
		if apierrors.IsNotFound(err) {
			return nil, nil // not served in this version
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s to find the fields the target does not know: %w", gvr, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			for j := range uses {
				if !hasField(obj.Object, paths[j]) {
					continue
				}
				uses[j].Objects++
				if len(uses[j].Examples) < maxExamples {
					uses[j].Examples = append(uses[j].Examples, objectName(obj.GetNamespace(), obj.GetName()))
				}
			}
			if read++; progress != nil && read%10000 == 0 {
				fmt.Fprintf(progress, "Read %d %s for fields the target does not know...\n", read, gvr.GroupResource())
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	return slices.DeleteFunc(uses, func(u FieldUse) bool { return u.Objects == 0 }), nil
}

func splitPath(p string) []string { return strings.Split(p, ".") }

// hasField reports whether the decoded JSON value v has a value (not null) at path.
func hasField(v any, path []string) bool {
	if len(path) == 0 {
		return v != nil
	}
	switch elem := path[0]; elem {
	case "[]":
		list, _ := v.([]any)
		return slices.ContainsFunc(list, func(item any) bool { return hasField(item, path[1:]) })
	case "{}":
		m, _ := v.(map[string]any)
		for _, value := range m {
			if hasField(value, path[1:]) {
				return true
			}
		}
		return false
	default:
		m, _ := v.(map[string]any)
		value, ok := m[elem]
		return ok && hasField(value, path[1:])
	}
}

func objectName(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// fieldReasons are the reasons a resource whose objects use uses blocks a release
// that does not know those fields.
func fieldReasons(target string, uses []FieldUse) []string {
	var out []string
	for _, u := range uses {
		more := ""
		if u.Objects > len(u.Examples) {
			more = fmt.Sprintf(" and %d more", u.Objects-len(u.Examples))
		}
		out = append(out, fmt.Sprintf("field %s of %s, which release %s does not know (introduced in %s), is set in %s: a server of %s drops it from each one it writes (%s%s)",
			displayPath(u.Path), u.Version, target, u.Introduced, plural(u.Objects, "object"), target, strings.Join(u.Examples, ", "), more))
	}
	return out
}

// displayPath writes a catalog field path as kubectl explain names fields.
func displayPath(p string) string {
	p = strings.ReplaceAll(p, ".[]", "[]")
	return strings.ReplaceAll(p, ".{}", "{}")
}
