package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/harness"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// Every resource Concord serves that kube-apiserver serves too has kube-apiserver's
// verbs, and so has each of its subresources, in both forms of discovery (checked
// against the catalog's recording of kube-apiserver's discovery); and a verb missing
// from them is refused as kube-apiserver refuses it.
func TestVerbsAreKubeAPIServers(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, harness.WithStorageMigration())
	kube, err := catalog.RecordedVerbs()
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.Servers[0].Config()
	compared := 0
	for _, path := range []string{"/api", "/apis"} {
		for _, g := range aggregatedDiscovery(t, cfg, path).Items {
			for _, v := range g.Versions {
				for _, r := range v.Resources {
					want, ok := kube.Of(schema.GroupResource{Group: g.Name, Resource: r.Resource})
					if !ok {
						continue // Concord's own (StorageStates, VersionSkews) or custom
					}
					compared++
					where := fmt.Sprintf("%s/%s %s", g.Name, v.Version, r.Resource)
					if !slices.Equal([]string(r.Verbs), want.Verbs) {
						t.Errorf("%s serves %v, kube-apiserver %v", where, r.Verbs, want.Verbs)
					}
					for _, s := range r.Subresources {
						if w, ok := want.Subresources[s.Subresource]; !ok || !slices.Equal([]string(s.Verbs), w) {
							t.Errorf("%s/%s serves %v, kube-apiserver %v", where, s.Subresource, s.Verbs, w)
						}
					}
				}
			}
		}
	}
	if compared < 40 {
		t.Errorf("compared the verbs of %d resource versions, want every built-in one", compared)
	}
	// The legacy form says the same of namespaces: no deletecollection, and finalize.
	rl, err := c.Servers[0].Clientset(t).Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rl.APIResources {
		if r.Name == "namespaces" && slices.Contains(r.Verbs, "deletecollection") {
			t.Errorf("namespaces: %v", r.Verbs)
		}
		if r.Name == "namespaces/finalize" && !slices.Equal([]string(r.Verbs), []string{"update"}) {
			t.Errorf("namespaces/finalize: %v", r.Verbs)
		}
	}
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{http.MethodDelete, "/api/v1/namespaces", http.StatusMethodNotAllowed},
		{http.MethodGet, "/apis/authentication.k8s.io/v1/tokenreviews", http.StatusMethodNotAllowed},
		{http.MethodGet, "/apis/authentication.k8s.io/v1/tokenreviews/x", http.StatusNotFound},
		{http.MethodGet, "/api/v1/namespaces/default/finalize", http.StatusMethodNotAllowed},
		{http.MethodPut, "/api/v1/namespaces/default/configmaps", http.StatusMethodNotAllowed},
	} {
		if code, st, _ := raw(t, c.Servers[0], tc.method, tc.path, "application/json", []byte("{}")); code != tc.code || st == nil {
			t.Errorf("%s %s: %d %+v, want a %d Status", tc.method, tc.path, code, st, tc.code)
		}
	}
	if code, _, _ := raw(t, c.Servers[0], http.MethodGet, "/api/v1/namespaces/default", "", nil); code != http.StatusOK {
		t.Errorf("after the refused requests, namespace default: %d", code)
	}
}

func aggregatedDiscovery(t *testing.T, cfg *rest.Config, path string) apidiscoveryv2.APIGroupDiscoveryList {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, cfg.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var list apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(body, &list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	return list
}
