package openapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// holds fails the test unless cond holds: documents follow the registry at once, on
// the next request.
func holds(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !cond() {
		t.Errorf("%s: not so on the next request", what)
	}
}

func TestDocumentsFollowRegistry(t *testing.T) {
	reg := testRegistry(t)
	svc := New(reg)
	srv := serve(t, svc)
	fetch := func(path string) (*http.Response, []byte) { return get(t, srv, path, "application/json") }
	v2Paths := func() map[string]spec.PathItem {
		_, body := fetch(V2Path)
		var doc spec.Swagger
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Paths.Paths
	}

	// A resource added after New.
	put(t, reg, gizmos("toys.example.com"))
	holds(t, "new group-version in the v3 index", func() bool { return index(t, fetch)["apis/toys.example.com/v1"] != "" })
	if _, ok := v2Paths()["/apis/toys.example.com/v1/namespaces/{namespace}/gizmos/{name}"]; !ok {
		t.Errorf("the v2 document lacks the new resource")
	}
	if resp, _ := fetch(index(t, fetch)["apis/toys.example.com/v1"]); resp.StatusCode != http.StatusOK {
		t.Errorf("new group-version document: %d", resp.StatusCode)
	}

	// A version stops being served.
	ct := cronTabs(t)
	ct.Versions[1].Served = false
	before := index(t, fetch)["apis/stable.example.com/v1"]
	put(t, reg, ct)
	holds(t, "unserved version out of the v3 index", func() bool { _, ok := index(t, fetch)["apis/stable.example.com/v1beta1"]; return !ok })
	if resp, _ := fetch("/openapi/v3/apis/stable.example.com/v1beta1"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unserved version document: %d, want 404", resp.StatusCode)
	}
	if _, ok := v2Paths()["/apis/stable.example.com/v1beta1/namespaces/{namespace}/crontabs"]; ok {
		t.Errorf("the v2 document keeps the unserved version")
	}
	// The v1 document was rebuilt from the new Resource, to the same content: same hash.
	if after := index(t, fetch)["apis/stable.example.com/v1"]; after != before {
		t.Errorf("unchanged v1 document changed hash: %s, then %s", before, after)
	}

	// A resource goes away.
	reg.Delete(schema.GroupResource{Group: "toys.example.com", Resource: "gizmos"})
	holds(t, "deleted resource out of the v3 index", func() bool { _, ok := index(t, fetch)["apis/toys.example.com/v1"]; return !ok })
	if _, ok := v2Paths()["/apis/toys.example.com/v1/namespaces/{namespace}/gizmos"]; ok {
		t.Errorf("the v2 document keeps the deleted resource")
	}
}

func TestNewEmptyRegistry(t *testing.T) {
	srv := serve(t, New(registry.New()))
	if resp, body := get(t, srv, V2Path, mediaProtoV2); resp.StatusCode != http.StatusOK || len(body) == 0 {
		t.Errorf("v2 of an empty registry: %d, %d bytes", resp.StatusCode, len(body))
	}
	if idx := index(t, func(path string) (*http.Response, []byte) { return get(t, srv, path, "") }); len(idx) != 0 {
		t.Errorf("v3 index of an empty registry: %v", idx)
	}
}

// TestConcurrentChangesAndReads changes the registry from several goroutines while
// others read every document and build type converters; run it with -race.
func TestConcurrentChangesAndReads(t *testing.T) {
	reg := testRegistry(t)
	svc := New(reg)
	srv := serve(t, svc)

	var writers, readers sync.WaitGroup
	stop := make(chan struct{})
	for w := range 3 {
		writers.Go(func() {
			group := fmt.Sprintf("w%d.example.com", w)
			for i := range 15 {
				if i%3 == 2 {
					reg.Delete(schema.GroupResource{Group: group, Resource: "gizmos"})
				} else if err := reg.Put(t.Context(), gizmos(group)); err != nil {
					t.Error(err)
				}
				time.Sleep(7 * time.Millisecond)
			}
		})
	}
	check := func(path, accept string, codes ...int) []byte {
		resp, body, err := tryGet(t.Context(), srv, path, accept)
		if err != nil {
			t.Error(err)
			return nil
		}
		if !slices.Contains(codes, resp.StatusCode) {
			t.Errorf("GET %s: %d, want one of %v", path, resp.StatusCode, codes)
		}
		return body
	}
	for r := range 3 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				switch r {
				case 0:
					check(V2Path, mediaProtoV2, http.StatusOK)
					check(V2Path, "application/json", http.StatusOK)
				case 1:
					var idx handler3.OpenAPIV3Discovery
					if err := json.Unmarshal(check(V3Path, "application/json", http.StatusOK), &idx); err != nil {
						t.Error(err)
						return
					}
					for _, gv := range idx.Paths {
						// A document may go between the index and its fetch.
						check(gv.ServerRelativeURL, "application/json", http.StatusOK, http.StatusNotFound)
					}
				case 2:
					for _, res := range reg.Resources() {
						if _, err := TypeConverter(res); err != nil {
							t.Errorf("TypeConverter(%s): %v", res.GroupResource(), err)
						}
					}
				}
			}
		})
	}
	writers.Wait()
	close(stop)
	readers.Wait()

	// After the dust settles, the documents match the registry.
	fetch := func(path string) (*http.Response, []byte) { return get(t, srv, path, "application/json") }
	holds(t, "documents match the registry", func() bool {
		idx := index(t, fetch)
		for w := range 3 {
			group := fmt.Sprintf("w%d.example.com", w)
			_, published := idx["apis/"+group+"/v1"]
			if published != (reg.Get(schema.GroupResource{Group: group, Resource: "gizmos"}) != nil) {
				return false
			}
		}
		return true
	})
}
