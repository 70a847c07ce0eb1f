package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/concordproject/concord/harness"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

func TestDiscovery(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	disc := c.Servers[0].Clientset(t).Discovery()
	// client-go asks for aggregated discovery first.
	groups, resources, err := disc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]metav1.APIResource{}
	for _, rl := range resources {
		for _, r := range rl.APIResources {
			found[rl.GroupVersion+"/"+r.Name] = r
		}
	}
	lease, ok := found["coordination.k8s.io/v1/leases"]
	if !ok || !lease.Namespaced || lease.Kind != "Lease" || len(lease.Verbs) == 0 {
		t.Fatalf("leases in discovery: %+v (groups %d)", lease, len(groups))
	}
	// The legacy documents carry storageVersionHash.
	rl, err := disc.ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rl.APIResources {
		if r.Name == "namespaces" && (r.StorageVersionHash == "" || r.ShortNames[0] != "ns") {
			t.Fatalf("namespaces: %+v", r)
		}
	}
	// Aggregated discovery answers with the content type echoed and an ETag.
	cfg := c.Servers[0].Config()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	req, _ := http.NewRequestWithContext(t.Context(), "GET", cfg.Host+"/apis", nil)
	req.Header.Set("Accept", accept+",application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var list apidiscoveryv2.APIGroupDiscoveryList
	if resp.Header.Get("Content-Type") != accept || resp.Header.Get("ETag") == "" || json.Unmarshal(body, &list) != nil {
		t.Fatalf("aggregated discovery: %s %q\n%s", resp.Header.Get("Content-Type"), resp.Header.Get("ETag"), body)
	}
	// The document may still change after start (definitions the server installs,
	// APIServices' discovery read): a 200 must then carry another ETag, and the next
	// revalidation of that one is answered 304 once nothing changed in between.
	etag := resp.Header.Get("ETag")
	waitFor(t, "a revalidation answered 304", func() (bool, error) {
		req.Header.Set("If-None-Match", etag)
		resp, err := hc.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusNotModified {
			return true, nil
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") == etag {
			t.Fatalf("revalidation of %s: %d with ETag %q, want 304, or 200 with a new ETag", etag, resp.StatusCode, resp.Header.Get("ETag"))
		}
		etag = resp.Header.Get("ETag")
		return false, nil
	})
}

// A graceful stop ends open watches and lets in-flight work finish; readiness fails
// first.
func TestGracefulShutdownEndsWatches(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	w, err := c.Servers[0].Clientset(t).CoreV1().ConfigMaps("default").Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		for range w.ResultChan() {
		}
		close(done)
	}()
	start := time.Now()
	c.Servers[0].Stop(t)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch stayed open after the server stopped")
	}
	t.Logf("server stopped with an open watch in %v", time.Since(start))
	// The other server is unaffected.
	if _, err := c.Servers[1].Clientset(t).CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}
