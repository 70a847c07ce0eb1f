package openapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	openapiproto "k8s.io/kube-openapi/pkg/util/proto"
	protovalidation "k8s.io/kube-openapi/pkg/util/proto/validation"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

const (
	mediaProtoV2 = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
	mediaProtoV3 = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
)

// metaModels are the apimachinery models every document with resources must carry.
var metaModels = []string{
	"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
	"io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
	"io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
	"io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
	"io.k8s.apimachinery.pkg.apis.meta.v1.Time",
	"io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
	"io.k8s.apimachinery.pkg.apis.meta.v1.Status",
	"io.k8s.apimachinery.pkg.apis.meta.v1.StatusDetails",
	"io.k8s.apimachinery.pkg.apis.meta.v1.StatusCause",
	"io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
	"io.k8s.apimachinery.pkg.apis.meta.v1.Preconditions",
	"io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
	"io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
}

func gvkOf(t *testing.T, ext spec.Extensions) []schema.GroupVersionKind {
	t.Helper()
	raw, err := json.Marshal(ext[extGVK])
	if err != nil {
		t.Fatal(err)
	}
	var gvks []schema.GroupVersionKind
	if err := json.Unmarshal(raw, &gvks); err != nil {
		t.Fatalf("x-kubernetes-group-version-kind %s: %v", raw, err)
	}
	return gvks
}

func TestV2JSON(t *testing.T) {
	srv := serve(t, New(testRegistry(t)))
	resp, body := get(t, srv, V2Path, "application/json")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("ETag") == "" {
		t.Fatalf("GET %s: %d, Content-Type %q, ETag %q", V2Path, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("ETag"))
	}
	if missing := unresolvedRefs(t, body); len(missing) > 0 {
		t.Errorf("unresolved references: %v", missing)
	}
	var doc spec.Swagger
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}

	for _, name := range append([]string{
		"com.example.stable.v1.CronTab", "com.example.stable.v1.CronTabList",
		"com.example.stable.v1beta1.CronTab", "com.example.stable.v1beta1.CronTabList",
		"io.k8s.api.coordination.v1.Lease", "io.k8s.api.coordination.v1.LeaseList",
		"io.k8s.api.core.v1.Namespace", "io.k8s.api.core.v1.NamespaceList",
		"com.example.free.v1.Blob", "io.k8s.api.autoscaling.v1.Scale",
	}, metaModels...) {
		if _, ok := doc.Definitions[name]; !ok {
			t.Errorf("definition %s missing", name)
		}
	}
	for name := range doc.Definitions {
		if strings.Contains(name, "v1alpha1") {
			t.Errorf("definition %s of an unserved version is published", name)
		}
	}
	for path := range doc.Paths.Paths {
		if strings.Contains(path, "v1alpha1") {
			t.Errorf("path %s of an unserved version is published", path)
		}
	}

	t.Run("kind", func(t *testing.T) {
		ct := doc.Definitions["com.example.stable.v1.CronTab"]
		if got, want := gvkOf(t, ct.Extensions), []schema.GroupVersionKind{{Group: "stable.example.com", Version: "v1", Kind: "CronTab"}}; !slices.Equal(got, want) {
			t.Errorf("x-kubernetes-group-version-kind = %v, want %v", got, want)
		}
		if ref := refOf(ct.Properties["metadata"]); ref != "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" {
			t.Errorf("metadata $ref = %q", ref)
		}
		for _, p := range []string{"apiVersion", "kind"} {
			if s := ct.Properties[p]; !s.Type.Contains("string") || s.Description == "" {
				t.Errorf("%s = %+v, want a described string", p, s.SchemaProps)
			}
		}
		list := doc.Definitions["com.example.stable.v1.CronTabList"]
		if got := refOf(list.Properties["items"].Items.Schema); got != "#/definitions/com.example.stable.v1.CronTab" {
			t.Errorf("CronTabList items $ref = %q", got)
		}
		if got := refOf(list.Properties["metadata"]); got != "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta" {
			t.Errorf("CronTabList metadata $ref = %q", got)
		}
		// What v2 cannot say is gone.
		sp := ct.Properties["spec"]
		if !slices.Equal(sp.Required, []string{"cronSpec"}) {
			t.Errorf("spec.required = %v, want the nullable image dropped", sp.Required)
		}
		if img := sp.Properties["image"]; len(img.Type) != 0 || img.Nullable {
			t.Errorf("nullable spec.image = %+v, want untyped", img.SchemaProps)
		}
		if mode := sp.Properties["mode"]; mode.AnyOf != nil {
			t.Errorf("spec.mode keeps anyOf")
		}
		if extra := sp.Properties["extra"]; len(extra.Type) != 0 || extra.Properties != nil {
			t.Errorf("spec.extra, preserving unknown fields = %+v, want untyped without properties", extra.SchemaProps)
		}
		tmpl := sp.Properties["template"]
		if _, ok := tmpl.Properties["metadata"]; !ok || !slices.Contains(tmpl.Required, "kind") {
			t.Errorf("embedded spec.template lacks metadata or a required kind: %+v", tmpl.SchemaProps)
		}
		if blob := doc.Definitions["com.example.free.v1.Blob"]; !blob.Type.Contains("object") || blob.Properties != nil {
			t.Errorf("Blob (no schema) = %+v, want a bare object", blob.SchemaProps)
		}
	})

	t.Run("paths", func(t *testing.T) {
		type op struct{ method, path, id, action string }
		for _, want := range []op{
			{"GET", "/apis/stable.example.com/v1/crontabs", "listStableExampleComV1CronTabForAllNamespaces", "list"},
			{"GET", "/apis/stable.example.com/v1/watch/crontabs", "watchStableExampleComV1CronTabListForAllNamespaces", "watchlist"},
			{"GET", "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs", "listStableExampleComV1NamespacedCronTab", "list"},
			{"POST", "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs", "createStableExampleComV1NamespacedCronTab", "post"},
			{"DELETE", "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs", "deleteStableExampleComV1CollectionNamespacedCronTab", "deletecollection"},
			{"GET", "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}", "readStableExampleComV1NamespacedCronTab", "get"},
			{"PUT", "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}", "replaceStableExampleComV1NamespacedCronTab", "put"},
			{"PATCH", "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}", "patchStableExampleComV1NamespacedCronTab", "patch"},
			{"DELETE", "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}", "deleteStableExampleComV1NamespacedCronTab", "delete"},
			{"GET", "/apis/stable.example.com/v1/watch/namespaces/{namespace}/crontabs/{name}", "watchStableExampleComV1NamespacedCronTab", "watch"},
			{"PATCH", "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/status", "patchStableExampleComV1NamespacedCronTabStatus", "patch"},
			{"PUT", "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale", "replaceStableExampleComV1NamespacedCronTabScale", "put"},
			{"GET", "/apis/stable.example.com/v1beta1/namespaces/{namespace}/crontabs/{name}", "readStableExampleComV1beta1NamespacedCronTab", "get"},
			{"DELETE", "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases", "deleteCoordinationV1CollectionNamespacedLease", "deletecollection"},
			{"GET", "/api/v1/namespaces", "listCoreV1Namespace", "list"},
			{"PUT", "/api/v1/namespaces/{name}/status", "replaceCoreV1NamespaceStatus", "put"},
			{"PATCH", "/apis/free.example.com/v1/blobs/{name}", "patchFreeExampleComV1Blob", "patch"},
		} {
			item, ok := doc.Paths.Paths[want.path]
			if !ok {
				t.Errorf("path %s missing", want.path)
				continue
			}
			o := map[string]*spec.Operation{"GET": item.Get, "POST": item.Post, "PUT": item.Put, "PATCH": item.Patch, "DELETE": item.Delete}[want.method]
			if o == nil {
				t.Errorf("%s %s missing", want.method, want.path)
				continue
			}
			if o.ID != want.id || o.Extensions[extAction] != want.action {
				t.Errorf("%s %s: operationId %q, action %v; want %q, %q", want.method, want.path, o.ID, o.Extensions[extAction], want.id, want.action)
			}
			if _, ok := o.Responses.StatusCodeResponses[http.StatusUnauthorized]; !ok {
				t.Errorf("%s %s: no 401 response", want.method, want.path)
			}
		}
		for _, path := range []string{"/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale", "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/status"} {
			if _, ok := doc.Paths.Paths[strings.Replace(path, "stable", "free", 1)]; ok {
				t.Errorf("%s published for a resource without the subresource", path)
			}
		}

		post := doc.Paths.Paths["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs"].Post
		for _, code := range []int{200, 201, 202} {
			if r, ok := post.Responses.StatusCodeResponses[code]; !ok || refOf(r.Schema) != "#/definitions/com.example.stable.v1.CronTab" {
				t.Errorf("create response %d = %+v", code, r)
			}
		}
		patch := func(path string) *spec.Operation { return doc.Paths.Paths[path].Patch }
		ctPatch := patch("/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}")
		if !slices.Contains(ctPatch.Consumes, "application/apply-patch+yaml") || slices.Contains(ctPatch.Consumes, "application/strategic-merge-patch+json") {
			t.Errorf("CronTab patch consumes %v, want apply patches and no strategic merge patch", ctPatch.Consumes)
		}
		if lp := patch("/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"); !slices.Contains(lp.Consumes, "application/strategic-merge-patch+json") {
			t.Errorf("Lease patch consumes %v, want strategic merge patch", lp.Consumes)
		}
		if scale := patch("/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale"); refOf(scale.Responses.StatusCodeResponses[200].Schema) != "#/definitions/io.k8s.api.autoscaling.v1.Scale" {
			t.Errorf("scale patch answers %+v", scale.Responses.StatusCodeResponses[200])
		}
	})
}

func TestV2Protobuf(t *testing.T) {
	srv := serve(t, New(testRegistry(t)))
	resp, body := get(t, srv, V2Path, mediaProtoV2)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" {
		t.Fatalf("GET %s as protobuf: %d, Content-Type %q", V2Path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	doc := &openapi_v2.Document{}
	if err := proto.Unmarshal(body, doc); err != nil {
		t.Fatalf("decoding the protobuf document: %v", err)
	}
	var paths []string
	for _, p := range doc.GetPaths().GetPath() {
		paths = append(paths, p.GetName())
	}
	if !slices.Contains(paths, "/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}/scale") {
		t.Errorf("protobuf document paths %v lack the CronTab scale subresource", paths)
	}

	// kubectl's client-side validation reads the document so.
	models, err := openapiproto.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("kubectl cannot read the document: %v", err)
	}
	for _, tc := range []struct {
		model   string
		obj     map[string]any
		invalid bool
	}{
		{"com.example.stable.v1.CronTab", map[string]any{
			"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": map[string]any{"name": "a", "labels": map[string]any{"x": "y"}},
			"spec": map[string]any{"cronSpec": "* * * * *", "image": nil, "timeout": "5m", "ports": []any{map[string]any{"name": "http", "port": int64(80)}}, "extra": map[string]any{"anything": true}},
		}, false},
		{"com.example.stable.v1.CronTab", map[string]any{
			"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": map[string]any{"name": "a"},
			"spec": map[string]any{"cronSpec": "* * * * *", "image": "x", "bogus": true},
		}, true},
		{"com.example.stable.v1.CronTab", map[string]any{
			"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": map[string]any{"name": "a", "bogus": 1},
		}, true},
		{"com.example.free.v1.Blob", map[string]any{
			"apiVersion": "free.example.com/v1", "kind": "Blob", "metadata": map[string]any{"name": "a"}, "anything": map[string]any{"goes": 1},
		}, false},
	} {
		model := models.LookupModel(tc.model)
		if model == nil {
			t.Errorf("model %s missing", tc.model)
			continue
		}
		errs := protovalidation.ValidateModel(tc.obj, model, tc.model)
		if (len(errs) > 0) != tc.invalid {
			t.Errorf("validating %v against %s: %v, want invalid=%v", tc.obj, tc.model, errs, tc.invalid)
		}
	}

	// The ETag lets clients skip unchanged documents.
	etag := resp.Header.Get("ETag")
	if resp, _ := get(t, srv, V2Path, mediaProtoV2, "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
		t.Errorf("GET with If-None-Match %s: %d, want 304", etag, resp.StatusCode)
	}
}

// index fetches the OpenAPI v3 index.
func index(t *testing.T, get func(path string) (*http.Response, []byte)) map[string]string {
	t.Helper()
	resp, body := get(V3Path)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", V3Path, resp.StatusCode)
	}
	var idx handler3.OpenAPIV3Discovery
	if err := json.Unmarshal(body, &idx); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for path, gv := range idx.Paths {
		out[path] = gv.ServerRelativeURL
	}
	return out
}

// supportsQueryParam answers as kubectl does whether the server validates fields of gvk:
// the PATCH operation tagged with gvk must list the query parameter.
func supportsQueryParam(doc *spec3.OpenAPI, gvk schema.GroupVersionKind, name string) bool {
	for _, item := range doc.Paths.Paths {
		op := item.Patch
		if op == nil {
			continue
		}
		raw, _ := json.Marshal(op.Extensions[extGVK])
		var got schema.GroupVersionKind
		if json.Unmarshal(raw, &got) != nil || got != gvk {
			continue
		}
		for _, p := range op.Parameters {
			if p.Name == name && p.In == "query" {
				return true
			}
		}
		return false
	}
	return false
}

func TestV3(t *testing.T) {
	srv := serve(t, New(testRegistry(t)))
	fetch := func(path string) (*http.Response, []byte) { return get(t, srv, path, "application/json") }
	idx := index(t, fetch)
	var paths []string
	for p := range idx {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	if want := []string{"api/v1", "apis/coordination.k8s.io/v1", "apis/free.example.com/v1", "apis/stable.example.com/v1", "apis/stable.example.com/v1beta1"}; !slices.Equal(paths, want) {
		t.Fatalf("index lists %v, want %v", paths, want)
	}

	docs := map[string]*spec3.OpenAPI{}
	for path, url := range idx {
		resp, body := fetch(url)
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
			t.Fatalf("GET %s: %d, Cache-Control %q", url, resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
		if missing := unresolvedRefs(t, body); len(missing) > 0 {
			t.Errorf("%s: unresolved references: %v", path, missing)
		}
		doc := &spec3.OpenAPI{}
		if err := json.Unmarshal(body, doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		docs[path] = doc
		for _, name := range metaModels {
			if _, ok := doc.Components.Schemas[name]; !ok {
				t.Errorf("%s: schema %s missing", path, name)
			}
		}
	}

	for _, gvk := range []schema.GroupVersionKind{
		{Group: "stable.example.com", Version: "v1", Kind: "CronTab"},
		{Group: "stable.example.com", Version: "v1beta1", Kind: "CronTab"},
		{Group: "coordination.k8s.io", Version: "v1", Kind: "Lease"},
		{Version: "v1", Kind: "Namespace"},
		{Group: "free.example.com", Version: "v1", Kind: "Blob"},
	} {
		if !supportsQueryParam(docs[documentPath(gvk.GroupVersion())], gvk, "fieldValidation") {
			t.Errorf("kubectl would not see that the server validates fields of %v", gvk)
		}
	}

	v1 := docs["apis/stable.example.com/v1"]
	for _, name := range []string{"com.example.stable.v1.CronTab", "com.example.stable.v1.CronTabList", "io.k8s.api.autoscaling.v1.Scale"} {
		if _, ok := v1.Components.Schemas[name]; !ok {
			t.Errorf("schema %s missing", name)
		}
	}
	if _, ok := v1.Components.Schemas["com.example.stable.v1beta1.CronTab"]; ok {
		t.Errorf("the v1 document carries the v1beta1 model")
	}
	ct := v1.Components.Schemas["com.example.stable.v1.CronTab"]
	if got := gvkOf(t, ct.Extensions); !slices.Equal(got, []schema.GroupVersionKind{{Group: "stable.example.com", Version: "v1", Kind: "CronTab"}}) {
		t.Errorf("x-kubernetes-group-version-kind = %v", got)
	}
	if md := ct.Properties["metadata"]; len(md.AllOf) != 1 || refOf(md.AllOf[0]) != "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" {
		t.Errorf("metadata = %+v, want a wrapped reference to ObjectMeta", md.SchemaProps)
	}
	sp := ct.Properties["spec"]
	if !sp.Properties["image"].Nullable || sp.Properties["mode"].AnyOf == nil || sp.Properties["ports"].Extensions["x-kubernetes-list-type"] != "map" {
		t.Errorf("spec lost v3 details: %+v", sp.Properties)
	}
	if tmpl := sp.Properties["template"]; tmpl.Properties["metadata"].AllOf == nil || tmpl.Properties["apiVersion"].Description == "" {
		t.Errorf("embedded spec.template lacks TypeMeta and ObjectMeta: %+v", tmpl.Properties)
	}
	blob := docs["apis/free.example.com/v1"].Components.Schemas["com.example.free.v1.Blob"]
	if !preservesUnknownFields(blob) || blob.Properties["metadata"].AllOf == nil {
		t.Errorf("Blob (no schema) = %+v, want an object preserving unknown fields, with ObjectMeta", blob)
	}

	// Unserved and unknown group-versions are not found.
	for _, path := range []string{"/openapi/v3/apis/stable.example.com/v1alpha1", "/openapi/v3/apis/nope.example.com/v1", "/openapi/v3/apis/stable.example.com/v1/extra"} {
		if resp, _ := fetch(path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}

	// Documents come as protobuf too.
	resp, body := get(t, srv, idx["apis/stable.example.com/v1"], mediaProtoV3)
	pb := &openapi_v3.Document{}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET v3 as protobuf: %d", resp.StatusCode)
	}
	if err := proto.Unmarshal(body, pb); err != nil || len(pb.GetPaths().GetPath()) == 0 {
		t.Errorf("v3 protobuf document: %v, %d paths", err, len(pb.GetPaths().GetPath()))
	}
}

// refOf returns the reference a schema holds.
func refOf(s any) string {
	switch s := s.(type) {
	case spec.Schema:
		return s.Ref.String()
	case *spec.Schema:
		if s != nil {
			return s.Ref.String()
		}
	}
	return ""
}
