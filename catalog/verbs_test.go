package catalog_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/test/kubepeer"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

var rewrite = flag.Bool("rewrite", false, "record verbs.json again from a kube-apiserver peer (test/kubepeer)")

// verbsRelease is the kube-apiserver release verbs.json is recorded from, and
// oldestEmulation the oldest emulation version it offers, recorded too to show that
// the verbs are the same there.
const (
	verbsRelease    = "1.37.2"
	oldestEmulation = "1.34"
)

func TestKubeVerbs(t *testing.T) {
	if *rewrite {
		recordVerbs(t)
	}
	v, err := catalog.RecordedVerbs()
	if err != nil {
		t.Fatal(err)
	}
	if v.Release != verbsRelease || len(v.Resources) < 50 {
		t.Fatalf("verbs.json records %d resources of %q, want kube-apiserver %s's", len(v.Resources), v.Release, verbsRelease)
	}
	ns, ok := v.Of(schema.GroupResource{Resource: "namespaces"})
	if !ok || ns.Serves("", "deletecollection") || !ns.Serves("finalize", "update") || !ns.Serves("", "list") {
		t.Errorf("namespaces: %+v, want no deletecollection, list, and finalize's update", ns)
	}
	if tr, _ := v.Of(schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}); !slices.Equal(tr.Verbs, []string{"create"}) {
		t.Errorf("tokenreviews serve %v, want create alone", tr.Verbs)
	}
}

// recordVerbs records verbs.json from a kube-apiserver peer with every API enabled, at
// its own release and at the oldest emulation version, and fails if a resource served
// at both has different verbs.
func recordVerbs(t *testing.T) {
	bin, err := kubepeer.Binary("kube-apiserver", verbsRelease)
	if err != nil {
		t.Fatal(err)
	}
	newest := peerVerbs(t, bin, "--runtime-config=api/all=true")
	oldest := peerVerbs(t, bin, "--runtime-config=api/all=true", "--emulated-version="+oldestEmulation)
	for gr, o := range oldest {
		if n, ok := newest[gr]; ok && fmt.Sprint(n) != fmt.Sprint(o) {
			t.Errorf("%s: %+v at %s, %+v at emulation version %s", gr, n, verbsRelease, o, oldestEmulation)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	data, err := json.MarshalIndent(catalog.KubeVerbs{Release: verbsRelease, Resources: newest}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("verbs.json", append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded the verbs of %d resources of kube-apiserver %s in verbs.json", len(newest), verbsRelease)
}

// peerVerbs runs a peer with args and reads the verbs of its resources from its
// aggregated discovery.
func peerVerbs(t *testing.T, bin string, args ...string) map[string]catalog.ResourceVerbs {
	t.Helper()
	cli := etcdtest.Start(t)
	p, err := kubepeer.Start(t.Context(), kubepeer.Options{Binary: bin, Dir: t.TempDir(), EtcdServers: cli.Endpoints(), Args: args})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]catalog.ResourceVerbs{}
	for _, path := range []string{"/api", "/apis"} {
		var list apidiscoveryv2.APIGroupDiscoveryList
		getJSON(t, client, cfg.Host+path, &list)
		for _, g := range list.Items {
			for _, v := range g.Versions {
				for _, r := range v.Resources {
					gr := schema.GroupResource{Group: g.Name, Resource: r.Resource}.String()
					rv := out[gr]
					rv.Verbs = union(rv.Verbs, r.Verbs)
					for _, s := range r.Subresources {
						if rv.Subresources == nil {
							rv.Subresources = map[string][]string{}
						}
						rv.Subresources[s.Subresource] = union(rv.Subresources[s.Subresource], s.Verbs)
					}
					out[gr] = rv
				}
			}
		}
	}
	return out
}

func getJSON(t *testing.T, client *http.Client, url string, into any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
	client.Timeout = 30 * time.Second
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v %s", url, resp.StatusCode, err, data)
	}
	if err := json.Unmarshal(data, into); err != nil {
		t.Fatal(err)
	}
}

// union is the sorted union of a and b.
func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}
