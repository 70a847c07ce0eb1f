package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/concordproject/concord/test/kubepeer"
)

// kubeOpenAPIRecording is what kube-apiserver 1.37.2 publishes of built-in resources,
// recorded by TestRecordOpenAPI (package test/kubepeer):
//
//	CONCORD_KUBEPEER=1 go test ./test/kubepeer -run TestRecordOpenAPI -args -rewrite
const kubeOpenAPIRecording = "testdata/openapi-kube-1.37.2.json"

// Models the recorded documents have and Concord's need not: those only operations
// Concord does not publish refer to (discovery's, serviceaccounts/token's,
// pods/eviction's).
var notPublished = map[string]bool{
	"io.k8s.apimachinery.pkg.apis.meta.v1.APIResource":     true,
	"io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList": true,
	"io.k8s.api.authentication.v1.BoundObjectReference":    true,
	"io.k8s.api.authentication.v1.TokenRequest":            true,
	"io.k8s.api.authentication.v1.TokenRequestSpec":        true,
	"io.k8s.api.authentication.v1.TokenRequestStatus":      true,
	"io.k8s.api.policy.v1.Eviction":                        true,
}

// Models whose v2 definitions differ from kube-apiserver's by design: kube's name every
// group-version its scheme registers them in, Concord's those it serves.
var v2GroupVersionKinds = map[string]bool{
	"io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions": true,
	"io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent":    true,
}

// The OpenAPI documents of a `concord server` describe built-in resources as
// kube-apiserver's do: every model of the recorded group-versions' v3 documents is
// kube's (descriptions, defaults, extensions, required lists, references), and so is
// its v2 definition (without defaults, as kube's v2 document has none), and
// kubectl explain prints what it prints against kube-apiserver. kubectl's uses of the
// documents still work on Deployments: client-side apply (strategic merge patches
// from the v2 document's patch strategies keep a container's env set by another
// writer) and server-side apply, twice each.
func TestKubectlOpenAPIAsKube(t *testing.T) {
	t.Parallel()
	k, logs := startServer(t, buildConcord(t))
	kubectlUntil(t, k, logs, "server ready", func(string) bool { return true }, "get", "--raw", "/readyz")
	rec := readOpenAPIRecording(t)

	t.Run("v3 models", func(t *testing.T) {
		for path, want := range rec.Schemas {
			got, err := kubepeer.ModelDigests([]byte(k.must(t, "", "get", "--raw", "/openapi/v3/"+path)))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			for name, digest := range want {
				switch {
				case got[name] == digest:
				case notPublished[name]:
				case got[name] == "":
					t.Errorf("%s: no model %s", path, name)
				default:
					t.Errorf("%s: model %s is not kube-apiserver's", path, name)
				}
			}
		}
	})
	t.Run("v2 definitions", func(t *testing.T) {
		got, err := kubepeer.DefinitionDigests([]byte(k.must(t, "", "get", "--raw", "/openapi/v2")))
		if err != nil {
			t.Fatal(err)
		}
		for name, digest := range rec.V2 {
			switch {
			case got[name] == digest, notPublished[name], v2GroupVersionKinds[name]:
			case got[name] == "":
				t.Errorf("v2: no definition %s", name)
			default:
				t.Errorf("v2: definition %s is not kube-apiserver's", name)
			}
		}
	})
	t.Run("explain", func(t *testing.T) {
		if v := kubectlVersion(t, k); v != rec.Kubectl {
			t.Skipf("kubectl on PATH is %s; the recording was made with %s (rerun the recorder)", v, rec.Kubectl)
		}
		for _, e := range rec.Explain {
			if got := k.must(t, "", append([]string{"explain"}, e.Args...)...); got != e.Output {
				t.Errorf("kubectl explain %s:\n%s\nkube-apiserver's:\n%s", strings.Join(e.Args, " "), got, e.Output)
			}
		}
	})
	t.Run("client-side apply", func(t *testing.T) {
		manifest := deployment("csa", "nginx:1.27")
		contains(t, k.must(t, manifest, "apply", "-f", "-"), "deployment.apps/csa created")
		k.must(t, "", "set", "env", "deployment/csa", "FROM_ELSEWHERE=kept")
		contains(t, k.must(t, deployment("csa", "nginx:1.28"), "apply", "-f", "-"), "deployment.apps/csa configured")
		got := k.must(t, "", "get", "deployment", "csa", "-o", "jsonpath={.spec.template.spec.containers[*].image} {.spec.template.spec.containers[0].env[0].value}")
		if got != "nginx:1.28 kept" {
			t.Errorf("after the second apply, image and env are %q, want the new image and the env kept", got)
		}
	})
	t.Run("server-side apply", func(t *testing.T) {
		for _, image := range []string{"nginx:1.27", "nginx:1.28"} {
			contains(t, k.must(t, deployment("ssa", image), "apply", "--server-side", "-f", "-"), "deployment.apps/ssa serverside-applied")
		}
		contains(t, k.must(t, "", "get", "deployment", "ssa", "-o", "yaml", "--show-managed-fields"), "image: nginx:1.28", "manager: kubectl", "operation: Apply",
			`k:{"name":"web"}`)
	})
}

// deployment is the manifest of an ordinary Deployment (kubectl validates it against
// the documents before sending it).
func deployment(name, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  namespace: default
  labels: {app: %[1]s}
spec:
  replicas: 2
  selector:
    matchLabels: {app: %[1]s}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 25%%}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      containers:
      - name: web
        image: %[2]s
        ports:
        - {containerPort: 80, protocol: TCP}
        resources:
          limits: {cpu: 500m, memory: 128Mi}
`, name, image)
}

func readOpenAPIRecording(t *testing.T) *kubepeer.OpenAPIRecording {
	t.Helper()
	data, err := os.ReadFile(kubeOpenAPIRecording)
	if err != nil {
		t.Fatal(err)
	}
	rec := &kubepeer.OpenAPIRecording{}
	if err := json.Unmarshal(data, rec); err != nil {
		t.Fatalf("%s: %v", kubeOpenAPIRecording, err)
	}
	return rec
}

// kubectlVersion is the release of k's kubectl, as it reports it.
func kubectlVersion(t *testing.T, k *kubectl) string {
	t.Helper()
	var v struct {
		ClientVersion struct{ GitVersion string } `json:"clientVersion"`
	}
	if err := json.Unmarshal([]byte(k.must(t, "", "version", "--client", "-o", "json")), &v); err != nil {
		t.Fatal(err)
	}
	return v.ClientVersion.GitVersion
}
