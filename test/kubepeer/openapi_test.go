package kubepeer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/test/kubepeer"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
)

// openAPIDocuments and openAPIExplained are what TestRecordOpenAPI records.
var (
	openAPIDocuments = []string{"apis/apps/v1", "api/v1", "apis/batch/v1", "apis/networking.k8s.io/v1", "apis/autoscaling/v2", "apis/certificates.k8s.io/v1"}
	openAPIExplained = [][]string{
		{"deployments.spec.replicas"},
		{"pods.spec.containers.ports.protocol"},
		{"services.spec.ports"},
		{"ingresses.spec.rules"},
		{"cronjobs.spec.schedule"},
		{"horizontalpodautoscalers.spec.metrics", "--api-version=autoscaling/v2"},
	}
)

// TestRecordOpenAPI records what kube-apiserver release publishes of the built-in
// resources in OpenAPI v3 (model digests of openAPIDocuments) and what kubectl from
// PATH explains of them, in test/e2e/testdata/openapi-kube-<release>.json, which the
// ordinary suite holds Concord to. It runs only to rewrite the recording:
//
//	CONCORD_KUBEPEER=1 go test ./test/kubepeer -run TestRecordOpenAPI -args -rewrite
//
// With CONCORD_OPENAPI_DUMP=<dir> it also writes the documents themselves there.
func TestRecordOpenAPI(t *testing.T) {
	if os.Getenv("CONCORD_KUBEPEER") != "1" || !*rewrite {
		t.Skip("CONCORD_KUBEPEER=1 and -args -rewrite run it (after test/kubepeer/build.sh kube-apiserver " + release + ")")
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var kubeLog bytes.Buffer
	p, err := kubepeer.Start(t.Context(), kubepeer.Options{Binary: binary(t, "kube-apiserver"), Dir: dir, EtcdServers: startEtcd(t, dir, "etcd"), Log: &kubeLog})
	if err != nil {
		t.Fatalf("%v\n%s", err, kubeLog.String())
	}
	defer p.Stop()
	rc, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dc := discovery.NewDiscoveryClientForConfigOrDie(rc)
	info, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	rec := kubepeer.OpenAPIRecording{Server: "kube-apiserver " + info.GitVersion, Kubectl: kubectlVersion(t, kubectl), Schemas: map[string]map[string]string{}}
	dump := os.Getenv("CONCORD_OPENAPI_DUMP")
	for _, path := range openAPIDocuments {
		body, err := dc.RESTClient().Get().AbsPath("/openapi/v3/" + path).Do(t.Context()).Raw()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if dump != "" {
			if err := os.WriteFile(filepath.Join(dump, strings.ReplaceAll(path, "/", "_")+".json"), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if rec.Schemas[path], err = kubepeer.ModelDigests(body); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	v2, err := dc.RESTClient().Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/json").Do(t.Context()).Raw()
	if err != nil {
		t.Fatalf("/openapi/v2: %v", err)
	}
	if dump != "" {
		if err := os.WriteFile(filepath.Join(dump, "v2.json"), v2, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if rec.V2, err = v2Digests(v2, rec.Schemas); err != nil {
		t.Fatal(err)
	}
	for _, args := range openAPIExplained {
		rec.Explain = append(rec.Explain, kubepeer.Explained{Args: args, Output: runKubectl(t, kubectl, p.Kubeconfig, append([]string{"explain"}, args...)...)})
	}
	out, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "e2e", "testdata", "openapi-kube-"+release+".json")
	if err := os.WriteFile(path, append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d documents and %d explanations of %s in %s", len(rec.Schemas), len(rec.Explain), info.GitVersion, path)
}

// v2Digests returns the digests of the v2 document's definitions of the models the
// v3 documents recorded have.
func v2Digests(doc []byte, v3 map[string]map[string]string) (map[string]string, error) {
	all, err := kubepeer.DefinitionDigests(doc)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, models := range v3 {
		for name := range models {
			if d, ok := all[name]; ok {
				out[name] = d
			}
		}
	}
	return out, nil
}

func runKubectl(t *testing.T, kubectl, kubeconfig string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig, "--cache-dir", t.TempDir()}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// kubectlVersion is the release of the kubectl at path, as it reports it.
func kubectlVersion(t *testing.T, path string) string {
	t.Helper()
	var v struct {
		ClientVersion struct{ GitVersion string } `json:"clientVersion"`
	}
	if err := json.Unmarshal([]byte(runKubectl(t, path, "", "version", "--client", "-o", "json")), &v); err != nil {
		t.Fatal(err)
	}
	return v.ClientVersion.GitVersion
}
