package openapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/concordproject/concord/registry"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kubeopenapi "k8s.io/kubernetes/pkg/generated/openapi"
)

// kubeDefinitions are kube's generated definitions, named by client-go's scheme.
var kubeDefinitions = &registry.GoDefinitions{Definitions: kubeopenapi.GetOpenAPIDefinitions, Scheme: clientgoscheme.Scheme}

// goLeases are leases whose kinds are kube's Go types; the list kind is renamed to
// one the Go types lack when listKind is set.
func goLeases(listKind string) *registry.Resource {
	r := leases()
	r.GoDefinitions = kubeDefinitions
	if listKind != "" {
		r.Names.ListKind = listKind
	}
	return r
}

// schemasOf fetches a v3 document's models.
func schemasOf(t *testing.T, get func(string) (*http.Response, []byte), path string) map[string]map[string]any {
	t.Helper()
	resp, body := get(path)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	if missing := unresolvedRefs(t, body); len(missing) > 0 {
		t.Errorf("%s: unresolved references %v", path, missing)
	}
	var doc struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Components.Schemas
}

// A resource with GoDefinitions is published as the Go types' generated models (their
// descriptions, what they refer to, their group-version-kinds), and DeleteOptions of
// its group-version names core/v1 beside it; a custom resource beside it keeps the
// models of its schema.
func TestGoDefinitionsModels(t *testing.T) {
	reg := registry.New()
	put(t, reg, goLeases(""))
	put(t, reg, cronTabs(t))
	srv := serve(t, New(reg))
	get := func(path string) (*http.Response, []byte) { return get(t, srv, path, "application/json") }

	schemas := schemasOf(t, get, V3Path+"/apis/coordination.k8s.io/v1")
	lease := schemas["io.k8s.api.coordination.v1.Lease"]
	if lease["description"] == nil {
		t.Errorf("Lease has no description: %v", lease)
	}
	if gvk, _ := json.Marshal(lease[extGVK]); string(gvk) != `[{"group":"coordination.k8s.io","kind":"Lease","version":"v1"}]` {
		t.Errorf("Lease's %s = %s", extGVK, gvk)
	}
	holder, _ := schemas["io.k8s.api.coordination.v1.LeaseSpec"]["properties"].(map[string]any)["holderIdentity"].(map[string]any)
	if holder["description"] == nil {
		t.Errorf("LeaseSpec.holderIdentity has no description: %v", holder)
	}
	if list := schemas["io.k8s.api.coordination.v1.LeaseList"]; list["description"] == nil {
		t.Errorf("LeaseList is not kube's: %v", list)
	}
	if gvk, _ := json.Marshal(schemas[deleteOptionsModel][extGVK]); string(gvk) != `[{"group":"","kind":"DeleteOptions","version":"v1"},{"group":"coordination.k8s.io","kind":"DeleteOptions","version":"v1"}]` {
		t.Errorf("DeleteOptions' %s = %s", extGVK, gvk)
	}

	crons := schemasOf(t, get, V3Path+"/apis/stable.example.com/v1")
	if gvk, _ := json.Marshal(crons[deleteOptionsModel][extGVK]); string(gvk) != `[{"group":"stable.example.com","kind":"DeleteOptions","version":"v1"}]` {
		t.Errorf("a custom group's DeleteOptions' %s = %s", extGVK, gvk)
	}
	if _, ok := crons["com.example.stable.v1.CronTab"]["x-kubernetes-selectable-fields"]; !ok {
		t.Errorf("the CronTab model lost its schema's extensions: %v", crons["com.example.stable.v1.CronTab"])
	}

	resp, body := get(V2Path)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", V2Path, resp.StatusCode)
	}
	var v2 struct {
		Definitions map[string]map[string]any `json:"definitions"`
	}
	if err := json.Unmarshal(body, &v2); err != nil {
		t.Fatal(err)
	}
	if v2.Definitions["io.k8s.api.coordination.v1.LeaseSpec"]["description"] == nil {
		t.Errorf("the v2 document lacks kube's LeaseSpec: %v", v2.Definitions["io.k8s.api.coordination.v1.LeaseSpec"])
	}
	if missing := unresolvedRefs(t, body); len(missing) > 0 {
		t.Errorf("v2: unresolved references %v", missing)
	}
}

// A kind the Go types define whose list kind they do not is published with kube's
// model and a list model of its own over it.
func TestGoDefinitionsWithoutListKind(t *testing.T) {
	reg := registry.New()
	put(t, reg, goLeases("LeaseRoster"))
	srv := serve(t, New(reg))
	get := func(path string) (*http.Response, []byte) { return get(t, srv, path, "application/json") }
	schemas := schemasOf(t, get, V3Path+"/apis/coordination.k8s.io/v1")
	if schemas["io.k8s.api.coordination.v1.Lease"]["description"] == nil {
		t.Errorf("Lease is not kube's: %v", schemas["io.k8s.api.coordination.v1.Lease"])
	}
	list := schemas["io.k8s.coordination.v1.LeaseRoster"]
	items, _ := list["properties"].(map[string]any)["items"].(map[string]any)
	if ref, _ := items["items"].(map[string]any)["$ref"].(string); ref != refsV3.ref("io.k8s.api.coordination.v1.Lease") {
		t.Errorf("the list model's items = %v, want references to kube's Lease", items)
	}
}

// Builds over the same generated definitions may run at once (two servers in one
// process, or a build beside a type converter's): they share the definitions and
// change only their own copies (run with -race).
func TestGoDefinitionsConcurrentBuilds(t *testing.T) {
	done := make(chan error, 4)
	for range 4 {
		go func() {
			res, reg := goLeases(""), registry.New()
			if err := reg.Put(t.Context(), res); err != nil {
				done <- err
				return
			}
			s := New(reg)
			s.refresh(t.Context())
			_, err := buildTypeConverter(res)
			done <- err
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
