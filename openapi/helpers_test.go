package openapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/concordproject/concord/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// loadSchema reads an openAPIV3Schema from testdata.
func loadSchema(t testing.TB, name string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	props := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.Unmarshal(data, props); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return props
}

// objectSchema returns a whole-object schema whose spec has the given string fields.
func objectSchema(specFields ...string) *apiextensionsv1.JSONSchemaProps {
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
	for _, f := range specFields {
		spec.Properties[f] = apiextensionsv1.JSONSchemaProps{Type: "string"}
	}
	return &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"apiVersion": {Type: "string"},
		"kind":       {Type: "string"},
		"metadata":   {Type: "object"},
		"spec":       spec,
		"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"phase": {Type: "string"},
		}},
	}}
}

func names(plural, singular, kind string) apiextensionsv1.CustomResourceDefinitionNames {
	return apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: singular, Kind: kind, ListKind: kind + "List"}
}

// cronTabs is a namespaced custom resource with a served v1 (rich schema, status and
// scale), a served v1beta1 and an unserved v1alpha1.
func cronTabs(t testing.TB) *registry.Resource {
	return &registry.Resource{
		Group:      "stable.example.com",
		Names:      names("crontabs", "crontab", "CronTab"),
		Namespaced: true,
		Versions: []registry.Version{
			{
				Name: "v1", Served: true, Schema: loadSchema(t, "crontab.yaml"),
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale:  &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas"},
				},
				SelectableFields: []apiextensionsv1.SelectableField{{JSONPath: ".spec.cronSpec"}},
			},
			{Name: "v1beta1", Served: true, Schema: objectSchema("cronSpec")},
			{Name: "v1alpha1", Served: false, Schema: objectSchema("schedule")},
		},
		StorageVersion: "v1",
	}
}

// leases is the built-in coordination.k8s.io/v1 Lease, with a partial schema.
func leases() *registry.Resource {
	return &registry.Resource{
		Group:          "coordination.k8s.io",
		Names:          names("leases", "lease", "Lease"),
		Namespaced:     true,
		Versions:       []registry.Version{{Name: "v1", Served: true, Schema: objectSchema("holderIdentity")}},
		StorageVersion: "v1",
	}
}

// namespaces is the cluster-scoped core v1 Namespace, with a status subresource.
func namespaces() *registry.Resource {
	return &registry.Resource{
		Names: names("namespaces", "namespace", "Namespace"),
		Versions: []registry.Version{{
			Name: "v1", Served: true, Schema: objectSchema(),
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		}},
		StorageVersion: "v1",
	}
}

// blobs is a cluster-scoped custom resource without a schema.
func blobs() *registry.Resource {
	return &registry.Resource{
		Group:          "free.example.com",
		Names:          names("blobs", "blob", "Blob"),
		Versions:       []registry.Version{{Name: "v1", Served: true}},
		StorageVersion: "v1",
	}
}

// gizmos is a namespaced custom resource of its own group, for registry changes.
func gizmos(group string) *registry.Resource {
	return &registry.Resource{
		Group:          group,
		Names:          names("gizmos", "gizmo", "Gizmo"),
		Namespaced:     true,
		Versions:       []registry.Version{{Name: "v1", Served: true, Schema: objectSchema("size")}},
		StorageVersion: "v1",
	}
}

// testRegistry returns a registry holding cronTabs, leases, namespaces and blobs.
func testRegistry(t testing.TB) *registry.Registry {
	t.Helper()
	reg := registry.New()
	for _, res := range []*registry.Resource{cronTabs(t), leases(), namespaces(), blobs()} {
		put(t, reg, res)
	}
	return reg
}

func put(t testing.TB, reg *registry.Registry, res *registry.Resource) {
	t.Helper()
	if err := reg.Put(t.Context(), res); err != nil {
		t.Fatalf("Put %s: %v", res.GroupResource(), err)
	}
}

// serve serves svc's documents over TLS.
func serve(t testing.TB, svc *Service) *httptest.Server {
	mux := http.NewServeMux()
	svc.InstallV2(mux)
	svc.InstallV3(mux)
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// get fetches path with the given Accept header (and extra headers as name, value pairs).
func get(t testing.TB, srv *httptest.Server, path, accept string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	resp, body, err := tryGet(t.Context(), srv, path, accept, headers...)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// tryGet is get for goroutines other than the test's.
func tryGet(ctx context.Context, srv *httptest.Server, path, accept string, headers ...string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
	if err != nil {
		return nil, nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return resp, body, nil
}

// unresolvedRefs returns the $ref values in doc (JSON) whose target is missing.
func unresolvedRefs(t testing.TB, doc []byte) []string {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(doc, &root); err != nil {
		t.Fatal(err)
	}
	var missing []string
	var walk func(any)
	walk = func(n any) {
		switch n := n.(type) {
		case map[string]any:
			for k, v := range n {
				if ref, ok := v.(string); ok && k == "$ref" {
					if !resolves(root, ref) {
						missing = append(missing, ref)
					}
					continue
				}
				walk(v)
			}
		case []any:
			for _, v := range n {
				walk(v)
			}
		}
	}
	walk(root)
	return missing
}

// resolves tells whether a local JSON pointer reference points into root.
func resolves(root map[string]any, ref string) bool {
	if !strings.HasPrefix(ref, "#/") {
		return false
	}
	var n any = root
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := n.(map[string]any)
		if !ok {
			return false
		}
		if n, ok = m[tok]; !ok {
			return false
		}
	}
	return true
}
