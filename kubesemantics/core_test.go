package kubesemantics

import (
	"encoding/base64"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/warning"
)

// testSemantics are the semantics of a server at 1.37 (kube's defaults for its gates).
var testSemantics = sync.OnceValues(func() (*Semantics, error) {
	g, err := NewGates(version.MustParse("1.37"), version.MustParse("1.36"), nil)
	if err != nil {
		return nil, err
	}
	return New(g), nil
})

// testCatalog are the built-in resources of the default catalog at its newest release.
var testCatalog = sync.OnceValues(func() ([]*registry.Resource, error) {
	cat, err := catalog.Default()
	if err != nil {
		return nil, err
	}
	return compatibility.Resources(cat, compatibility.Default(cat.BinaryVersion()))
})

// served returns the catalog's resource gr, given its Semantics.
func served(t *testing.T, gr schema.GroupResource) *registry.Resource {
	t.Helper()
	rs, err := testCatalog()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.GroupResource() == gr {
			return coreConfigured(t, r)
		}
	}
	t.Fatalf("the catalog has no %s", gr)
	return nil
}

// unserved returns core/v1 resource plural, of kind, which the catalog lacks (Concord
// does not serve it yet), given its Semantics; status: it has a status subresource.
func unserved(t *testing.T, plural, kind string, namespaced, status bool) *registry.Resource {
	t.Helper()
	v := registry.Version{Name: "v1", Served: true}
	if status {
		v.Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	}
	return coreConfigured(t, &registry.Resource{
		Names:      apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List"},
		Namespaced: namespaced, Versions: []registry.Version{v}, StorageVersion: "v1",
	})
}

func coreConfigured(t *testing.T, r *registry.Resource) *registry.Resource {
	t.Helper()
	sem, err := testSemantics()
	if err != nil {
		t.Fatal(err)
	}
	if !sem.Configure(r) {
		t.Fatalf("no semantics for %s", r.GroupResource())
	}
	return r
}

// recorder collects the warnings of a call.
type recorder struct {
	mu   sync.Mutex
	list []string
}

func (r *recorder) AddWarning(_, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, text)
}

// result is what a write through a resource's Semantics gave.
type result struct {
	obj      *registry.Object
	errs     field.ErrorList
	warnings []string
}

// create defaults obj (in version) and prepares and validates it as new.
func coreCreate(t *testing.T, r *registry.Resource, version string, obj map[string]any) result {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	if err := r.Semantics.Default(version, u); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	rec := &recorder{}
	errs, err := r.Semantics.Create(warning.WithWarningRecorder(t.Context(), rec), version, u)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return result{obj: u, errs: errs, warnings: rec.list}
}

// update defaults obj (in version) and prepares and validates it as an update of old
// through subresource.
func coreUpdate(t *testing.T, r *registry.Resource, version, subresource string, obj map[string]any, old *registry.Object) result {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	if err := r.Semantics.Default(version, u); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	rec := &recorder{}
	errs, err := r.Semantics.Update(warning.WithWarningRecorder(t.Context(), rec), version, subresource, u, old.DeepCopy())
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	return result{obj: u, errs: errs, warnings: rec.list}
}

// mustCreate creates obj, which must be valid, and returns it as a store keeps it.
func coreMustCreate(t *testing.T, r *registry.Resource, version string, obj map[string]any) *registry.Object {
	t.Helper()
	res := coreCreate(t, r, version, obj)
	if len(res.errs) > 0 {
		t.Fatalf("a valid %s: %v", r.Names.Kind, res.errs)
	}
	res.obj.SetUID("6b2f3c9e-5d1a-4f8e-9c7b-2a1d0e3f4b5c")
	res.obj.SetResourceVersion("7")
	return res.obj
}

// edit returns a deep copy of obj's content changed by change.
func edit(obj *registry.Object, change func(o map[string]any)) map[string]any {
	o := obj.DeepCopy().Object
	change(o)
	return o
}

// fieldErr is an expected error: its type and field path.
type fieldErr struct {
	typ  field.ErrorType
	path string
}

// wantErrs checks that errs are want: the same types at the same paths, in any order.
func wantErrs(t *testing.T, errs field.ErrorList, want ...fieldErr) {
	t.Helper()
	var got, exp []string
	for _, e := range errs {
		got = append(got, string(e.Type)+" "+e.Field)
	}
	for _, w := range want {
		exp = append(exp, string(w.typ)+" "+w.path)
	}
	sort.Strings(got)
	sort.Strings(exp)
	got, exp = slices.Compact(got), slices.Compact(exp)
	if !slices.Equal(got, exp) {
		t.Errorf("errors %v\nwant %v\n(%v)", got, exp, errs)
	}
}

// str is the string at path in obj ("" if none).
func str(obj *registry.Object, path ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, path...)
	return s
}

func has(obj *registry.Object, path ...string) bool {
	_, ok, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	return ok
}

func meta(name, namespace string) map[string]any {
	m := map[string]any{"name": name}
	if namespace != "" {
		m["namespace"] = namespace
	}
	return m
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func containsWarning(warnings []string, part string) bool {
	return slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, part) })
}

var (
	required     = field.ErrorTypeRequired
	invalid      = field.ErrorTypeInvalid
	forbidden    = field.ErrorTypeForbidden
	notSupported = field.ErrorTypeNotSupported
	duplicate    = field.ErrorTypeDuplicate
)

func TestConfigMaps(t *testing.T) {
	r := served(t, schema.GroupResource{Resource: "configmaps"})
	cm := coreMustCreate(t, r, "v1", map[string]any{"metadata": meta("c", "ns"), "data": map[string]any{"a": "b"}, "immutable": true})
	res := coreCreate(t, r, "v1", map[string]any{"metadata": meta("c", "ns"), "data": map[string]any{"a b": "c"}})
	wantErrs(t, res.errs, fieldErr{invalid, "data[a b]"})
	res = coreUpdate(t, r, "v1", "", edit(cm, func(o map[string]any) { o["data"] = map[string]any{"a": "c"} }), cm)
	wantErrs(t, res.errs, fieldErr{forbidden, "data"})
}

func TestSecrets(t *testing.T) {
	r := served(t, schema.GroupResource{Resource: "secrets"})
	s := coreMustCreate(t, r, "v1", map[string]any{"metadata": meta("s", "ns"),
		"data": map[string]any{"a": b64("1")}, "stringData": map[string]any{"a": "2", "b": "3"}})
	if str(s, "type") != "Opaque" || str(s, "data", "a") != b64("2") || str(s, "data", "b") != b64("3") || has(s, "stringData") {
		t.Errorf("stringData not merged into data, or no default type: %v", s.Object)
	}
	if s.GetGeneration() != 0 {
		t.Errorf("generation %d, want none", s.GetGeneration())
	}
	res := coreCreate(t, r, "v1", map[string]any{"metadata": meta("t", "ns"), "type": "kubernetes.io/tls", "data": map[string]any{"bad key": b64("x")}})
	wantErrs(t, res.errs, fieldErr{required, "data[tls.crt]"}, fieldErr{required, "data[tls.key]"}, fieldErr{invalid, "data[bad key]"})
	res = coreCreate(t, r, "v1", map[string]any{"metadata": meta("t", "ns"), "type": "kubernetes.io/tls",
		"data": map[string]any{"tls.crt": b64("not a certificate"), "tls.key": b64("not a key")}})
	if len(res.errs) > 0 || len(res.warnings) != 1 {
		t.Errorf("a TLS Secret whose pair does not parse: errors %v, warnings %v; want one warning", res.errs, res.warnings)
	}

	res = coreUpdate(t, r, "v1", "", edit(s, func(o map[string]any) { o["type"] = "kubernetes.io/basic-auth" }), s)
	wantErrs(t, res.errs, fieldErr{invalid, "type"}, fieldErr{required, "data[username]"}, fieldErr{required, "data[password]"})
	res = coreUpdate(t, r, "v1", "", edit(s, func(o map[string]any) { delete(o, "type") }), s)
	if len(res.errs) > 0 || str(res.obj, "type") != "Opaque" {
		t.Errorf("an update without the type: %v, type %q", res.errs, str(res.obj, "type"))
	}
	frozen := coreUpdate(t, r, "v1", "", edit(s, func(o map[string]any) { o["immutable"] = true }), s).obj
	res = coreUpdate(t, r, "v1", "", edit(frozen, func(o map[string]any) { o["data"] = map[string]any{"a": b64("9")} }), frozen)
	wantErrs(t, res.errs, fieldErr{forbidden, "data"})
}

func TestServiceAccounts(t *testing.T) {
	r := served(t, schema.GroupResource{Resource: "serviceaccounts"})
	sa := coreMustCreate(t, r, "v1", map[string]any{"metadata": meta("sa", "ns"),
		"secrets": []any{map[string]any{"name": "token", "namespace": "other", "uid": "123", "kind": "Secret"}}})
	refs, _, _ := unstructured.NestedSlice(sa.Object, "secrets")
	if len(refs) != 1 || len(refs[0].(map[string]any)) != 1 {
		t.Errorf("secret references %v, want their names only", refs)
	}
	res := coreCreate(t, r, "v1", map[string]any{"metadata": meta("Not_A_Name", "ns")})
	wantErrs(t, res.errs, fieldErr{invalid, "metadata.name"})

	annotated := map[string]any{"name": "sa", "namespace": "ns", "annotations": map[string]any{enforceMountableSecrets: "true"}}
	res = coreCreate(t, r, "v1", map[string]any{"metadata": annotated})
	if !containsWarning(res.warnings, "deprecated in v1.32+") {
		t.Errorf("warnings %v, want the annotation's deprecation", res.warnings)
	}
	withAnnotation := coreMustCreate(t, r, "v1", map[string]any{"metadata": annotated})
	res = coreUpdate(t, r, "v1", "", edit(withAnnotation, func(o map[string]any) { o["automountServiceAccountToken"] = false }), withAnnotation)
	if len(res.errs) > 0 || len(res.warnings) > 0 {
		t.Errorf("an update of a ServiceAccount that had the annotation: %v, warnings %v", res.errs, res.warnings)
	}
}

func TestEndpoints(t *testing.T) {
	r := unserved(t, "endpoints", "Endpoints", true, false)
	subset := func(ip string, port int64) []any {
		return []any{map[string]any{"addresses": []any{map[string]any{"ip": ip}}, "ports": []any{map[string]any{"port": port}}}}
	}
	e := coreMustCreate(t, r, "v1", map[string]any{"metadata": meta("e", "ns"), "subsets": subset("10.1.2.3", 80)})
	if p, _, _ := unstructured.NestedSlice(e.Object, "subsets"); str(&unstructured.Unstructured{Object: p[0].(map[string]any)["ports"].([]any)[0].(map[string]any)}, "protocol") != "TCP" {
		t.Errorf("port protocol not defaulted: %v", p)
	}
	res := coreCreate(t, r, "v1", map[string]any{"metadata": meta("e", "ns"), "subsets": subset("not-an-ip", 70000)})
	wantErrs(t, res.errs, fieldErr{invalid, "subsets[0].addresses[0].ip"}, fieldErr{invalid, "subsets[0].ports[0].port"})
	res = coreCreate(t, r, "v1", map[string]any{"metadata": meta("e", "ns"), "subsets": subset("2001:DB8::1", 80)})
	if len(res.errs) > 0 || !containsWarning(res.warnings, "subsets[0].addresses[0].ip") {
		t.Errorf("errors %v, warnings %v, want one of the IPv6 address not in canonical form", res.errs, res.warnings)
	}
	res = coreUpdate(t, r, "v1", "", edit(e, func(o map[string]any) { o["subsets"] = subset("10.1.2.4", 0) }), e)
	wantErrs(t, res.errs, fieldErr{invalid, "subsets[0].ports[0].port"})
}

// Core Events and events.k8s.io Events share one strategy, whose validation depends
// on the request's group-version: what core/v1 takes, events.k8s.io/v1 may refuse.
func TestEvents(t *testing.T) {
	coreEvents := served(t, schema.GroupResource{Resource: "events"})
	event := map[string]any{"metadata": meta("e", "ns"),
		"involvedObject": map[string]any{"kind": "Pod", "namespace": "ns", "name": "p"},
		"reason":         "Started", "message": "started", "type": "Normal"}
	e := coreMustCreate(t, coreEvents, "v1", event)
	res := coreUpdate(t, coreEvents, "v1", "", edit(e, func(o map[string]any) { o["type"] = "Odd" }), e)
	wantErrs(t, res.errs) // core/v1 validates as it always did: loosely
	res = coreCreate(t, coreEvents, "v1", edit(e, func(o map[string]any) {
		o["involvedObject"].(map[string]any)["namespace"] = "other"
	}))
	wantErrs(t, res.errs, fieldErr{invalid, "involvedObject.namespace"})

	events := served(t, schema.GroupResource{Group: "events.k8s.io", Resource: "events"})
	valid := map[string]any{"metadata": meta("e", "ns"),
		"regarding": map[string]any{"kind": "Pod", "namespace": "ns", "name": "p"}, "reason": "Started", "note": "started", "type": "Normal",
		"eventTime": "2026-01-02T03:04:05.000000Z", "reportingController": "example.com/ctl", "reportingInstance": "ctl-1", "action": "Start"}
	ev := coreMustCreate(t, events, "v1", valid)
	res = coreCreate(t, events, "v1", edit(ev, func(o map[string]any) { delete(o, "eventTime"); o["deprecatedCount"] = int64(3) }))
	wantErrs(t, res.errs, fieldErr{required, "eventTime"}, fieldErr{invalid, "count"})
	res = coreUpdate(t, events, "v1", "", edit(ev, func(o map[string]any) { o["type"] = "Warning" }), ev)
	wantErrs(t, res.errs, fieldErr{invalid, "type"})
	if e := str(ev, "apiVersion"); e != "events.k8s.io/v1" {
		t.Errorf("apiVersion %q after the round trip, want events.k8s.io/v1", e)
	}
}

func TestPodTemplates(t *testing.T) {
	r := served(t, schema.GroupResource{Resource: "podtemplates"})
	template := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "one"}}}}
	pt := coreMustCreate(t, r, "v1", map[string]any{"metadata": meta("pt", "ns"), "template": template})
	if pt.GetGeneration() != 1 || str(pt, "template", "spec", "restartPolicy") != "Always" {
		t.Errorf("a new PodTemplate: generation %d, %v", pt.GetGeneration(), pt.Object["template"])
	}
	res := coreCreate(t, r, "v1", map[string]any{"metadata": meta("pt", "ns"), "template": map[string]any{}})
	wantErrs(t, res.errs, fieldErr{required, "template.spec.containers"})
	res = coreUpdate(t, r, "v1", "", edit(pt, func(o map[string]any) { o["metadata"].(map[string]any)["labels"] = map[string]any{"a": "b"} }), pt)
	if len(res.errs) > 0 || res.obj.GetGeneration() != 1 {
		t.Errorf("a metadata update: %v, generation %d", res.errs, res.obj.GetGeneration())
	}
	res = coreUpdate(t, r, "v1", "", edit(pt, func(o map[string]any) {
		o["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"] = "two"
	}), pt)
	if len(res.errs) > 0 || res.obj.GetGeneration() != 2 {
		t.Errorf("a template update: %v, generation %d", res.errs, res.obj.GetGeneration())
	}
}
