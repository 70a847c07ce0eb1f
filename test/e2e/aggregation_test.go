package e2e

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/test/kubepeer"
)

// sampleRelease is the release of k8s.io/sample-apiserver the test runs.
const sampleRelease = "1.37.2"

// An aggregated API server nobody here wrote, k8s.io/sample-apiserver built from its
// Go module with its own etcd, registered through an APIService: it reads the
// request-header configuration Concord publishes and delegates authentication and
// authorization to Concord; through the concord binary, kubectl lists its resources
// (discovery), explains them (OpenAPI), creates and reads flunders (the proxy; the
// storage-version barrier lets them pass).
func TestSampleAPIServer(t *testing.T) {
	bin := buildConcord(t)
	sampleBin, err := kubepeer.Binary("sample-apiserver", sampleRelease)
	if errors.Is(err, kubepeer.ErrNotBuilt) && os.Getenv("CONCORD_CONFORMANCE") != "required" {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "concord")
	logs := process(t, bin, "server", "--data-dir", data, "--secure-port", fmt.Sprint(harness.FreePort(t)))
	kubeconfig := filepath.Join(data, "admin.kubeconfig")
	waitForFile(t, kubeconfig, logs)
	k := newKubectl(t, kubeconfig)

	etcd := etcdtest.Start(t)
	sample, err := kubepeer.StartSample(t.Context(), kubepeer.SampleOptions{
		Binary: sampleBin, Dir: filepath.Join(dir, "sample"), EtcdServers: etcd.Endpoints(),
		Kubeconfig: kubeconfig, Hosts: []string{"api.wardle.svc"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sample.Stop)

	k.must(t, fmt.Sprintf(sampleManifest, sample.Port, base64.StdEncoding.EncodeToString(sample.CA)), "apply", "-f", "-")
	waitKubectl(t, k, "the APIService Available", "True",
		"get", "apiservice", "v1alpha1.wardle.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
	waitKubectl(t, k, "flunders in discovery", "flunders", "api-resources", "--api-group=wardle.example.com")
	contains(t, k.must(t, "", "api-resources", "--api-group=wardle.example.com"), "fischers", "wardle.example.com/v1alpha1")

	k.must(t, flunder, "create", "-f", "-")
	contains(t, k.must(t, "", "get", "flunders", "-A"), "default", "my-flunder")
	contains(t, k.must(t, "", "get", "flunder", "my-flunder", "-o", "jsonpath={.spec.reference}"), "my-fischer")
	waitKubectl(t, k, "the flunder's OpenAPI", "Flunder", "explain", "flunders")
	k.must(t, "", "delete", "flunder", "my-flunder")
	if out, err := k.run(t, "", "get", "flunder", "my-flunder"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("a deleted flunder: %v\n%s", err, out)
	}

	// The backend goes: kubectl hears a 503 that names the APIService.
	sample.Stop()
	out, err := k.run(t, "", "get", "flunders", "-A")
	if err == nil || !strings.Contains(out, "v1alpha1.wardle.example.com") {
		t.Errorf("flunders of a stopped backend: %v\n%s", err, out)
	}
}

// waitKubectl runs kubectl until its output contains want, for up to 30 s.
func waitKubectl(t *testing.T, k *kubectl, what, want string, args ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := k.run(t, "", args...)
		if err == nil && strings.Contains(out, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: kubectl %s: %v\n%s", what, strings.Join(args, " "), err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// sampleManifest registers the sample-apiserver (its port and CA bundle to fill in)
// behind Concord: a Service, its EndpointSlice (Concord serves them as data: the
// endpoint names where the server listens) and the APIService.
const sampleManifest = `apiVersion: v1
kind: Namespace
metadata:
  name: wardle
---
apiVersion: v1
kind: Service
metadata:
  name: api
  namespace: wardle
spec:
  ports:
  - name: https
    port: 443
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: api
  namespace: wardle
  labels:
    kubernetes.io/service-name: api
addressType: IPv4
endpoints:
- addresses: ["127.0.0.1"]
ports:
- name: https
  port: %d
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1alpha1.wardle.example.com
spec:
  group: wardle.example.com
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 15
  service:
    namespace: wardle
    name: api
  caBundle: %s
`

const flunder = `apiVersion: wardle.example.com/v1alpha1
kind: Flunder
metadata:
  name: my-flunder
  namespace: default
spec:
  reference: my-fischer
`
