package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/test/ports"
)

// kubectl runs kubectl with the given kubeconfig and returns its combined output.
type kubectl struct {
	path       string
	kubeconfig string
	cacheDir   string // this kubectl's discovery and HTTP cache
}

// startServer runs `concord server` of bin on a data directory of its own and a free
// port, and returns a kubectl of its admin kubeconfig and the server's logs.
func startServer(t *testing.T, bin string) (*kubectl, *running) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "data")
	logs := process(t, bin, "server", "--data-dir", data, "--secure-port", fmt.Sprint(ports.Free(t)))
	kubeconfig := filepath.Join(data, "admin.kubeconfig")
	waitForFile(t, kubeconfig, logs)
	return newKubectl(t, kubeconfig), logs
}

func newKubectl(t *testing.T, kubeconfig string) *kubectl {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not on PATH: skipping the kubectl end-to-end tests")
	}
	// kubectl caches discovery for hours under the server's host and port; a port
	// another test's server had before would answer with that server's resources.
	return &kubectl{path: path, kubeconfig: kubeconfig, cacheDir: t.TempDir()}
}

func (k *kubectl) run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.path, append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", k.cacheDir}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// must runs kubectl and fails the test on error.
func (k *kubectl) must(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := k.run(t, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func contains(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Fatalf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestKubectl(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, harness.WithStorageMigration())
	k := newKubectl(t, c.Servers[0].KubeconfigPath)
	k2 := newKubectl(t, c.Servers[1].KubeconfigPath)

	t.Run("api-resources", func(t *testing.T) {
		out := k.must(t, "", "api-resources")
		contains(t, out, "namespaces", "configmaps", "leases", "coordination.k8s.io/v1")
	})
	t.Run("create get delete", func(t *testing.T) {
		k.must(t, "", "create", "configmap", "cm1", "--from-literal=a=b")
		contains(t, k2.must(t, "", "get", "configmaps"), "NAME", "cm1")
		contains(t, k2.must(t, "", "get", "configmap", "cm1", "-o", "jsonpath={.data.a}"), "b")
		k2.must(t, "", "delete", "configmap", "cm1")
		out, err := k.run(t, "", "get", "configmap", "cm1")
		if err == nil || !strings.Contains(out, "NotFound") && !strings.Contains(out, "not found") {
			t.Fatalf("get after delete: %v\n%s", err, out)
		}
	})
	t.Run("apply and patch", func(t *testing.T) {
		manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  labels:\n    tier: web\ndata:\n  k: v1\n"
		contains(t, k.must(t, manifest, "apply", "-f", "-"), "configmap/applied created")
		contains(t, k.must(t, strings.Replace(manifest, "k: v1", "k: v2", 1), "apply", "-f", "-"), "configmap/applied configured")
		contains(t, k2.must(t, "", "get", "configmap", "applied", "-o", "jsonpath={.data.k}"), "v2")
		k.must(t, "", "patch", "configmap", "applied", "--type=merge", "-p", `{"data":{"extra":"x"}}`)
		k.must(t, "", "patch", "configmap", "applied", "-p", `{"data":{"smp":"y"}}`)
		k.must(t, "", "patch", "configmap", "applied", "--type=json", "-p", `[{"op":"remove","path":"/data/extra"}]`)
		contains(t, k.must(t, "", "get", "configmap", "applied", "-o", "jsonpath={.data}"), `"smp":"y"`, `"k":"v2"`)
		contains(t, k.must(t, "", "get", "configmaps", "-l", "tier=web"), "applied")
	})
	t.Run("apply --server-side", func(t *testing.T) {
		manifest := "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: ssa\n  namespace: default\nspec:\n  holderIdentity: me\n"
		contains(t, k.must(t, manifest, "apply", "--server-side", "-f", "-"), "lease.coordination.k8s.io/ssa serverside-applied")
		out := k.must(t, "", "get", "lease", "ssa", "-o", "yaml", "--show-managed-fields")
		contains(t, out, "manager: kubectl", "operation: Apply", "holderIdentity: me")
	})
	t.Run("deployments", func(t *testing.T) {
		k.must(t, "", "create", "deployment", "web", "--image=nginx:1.27", "--replicas=2")
		contains(t, k2.must(t, "", "get", "deployments"), "NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "web", "0/2")
		contains(t, k.must(t, "", "scale", "deployment", "web", "--replicas=5"), "deployment.apps/web scaled")
		contains(t, k2.must(t, "", "get", "deployment", "web", "-o", "jsonpath={.spec.replicas} {.spec.strategy.type}"), "5 RollingUpdate")
	})
	t.Run("jobs and other data", func(t *testing.T) {
		k.must(t, "", "create", "job", "hello", "--image=busybox:1.36", "--", "echo", "hi")
		contains(t, k2.must(t, "", "get", "jobs"), "NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE", "hello", "Running", "0/1")
		contains(t, k2.must(t, "", "get", "job", "hello", "-o", "jsonpath={.spec.template.metadata.labels.job-name}"), "hello")
		// A started Job's template is immutable; its other fields are not.
		k.must(t, "", "label", "job", "hello", "team=batch")
		k.must(t, "", "patch", "job", "hello", "-p", `{"spec":{"backoffLimit":2}}`)
		out, err := k.run(t, "", "set", "image", "job/hello", "hello=busybox:1.37")
		if err == nil || !strings.Contains(out, "spec.template: Invalid value") || !strings.Contains(out, "field is immutable") {
			t.Errorf("kubectl set image on a Job: %v\n%s", err, out)
		}
		k.must(t, "", "delete", "job", "hello")
		k.must(t, "", "create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=1")
		contains(t, k2.must(t, "", "get", "pdb"), "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "web")
		k.must(t, "", "create", "ingress", "web", "--rule=example.com/=web:80")
		contains(t, k2.must(t, "", "get", "ingresses"), "CLASS", "HOSTS", "ADDRESS", "web", "example.com")
		contains(t, k.must(t, "", "api-resources", "--api-group=certificates.k8s.io"), "certificatesigningrequests", "csr")
	})
	t.Run("componentstatuses", func(t *testing.T) {
		// Probed as kube-apiserver probes them: etcd answers, and no controller
		// manager or scheduler listens on this machine's default ports.
		out := k.must(t, "", "get", "componentstatuses")
		contains(t, out, "NAME", "STATUS", "MESSAGE", "ERROR", "etcd-0", "Healthy", "ok", "controller-manager", "Unhealthy", "127.0.0.1:10257", "scheduler")
		contains(t, k2.must(t, "", "get", "cs", "etcd-0", "-o", "jsonpath={.conditions[0].type}={.conditions[0].status}"), "Healthy=True")
		if out, err := k.run(t, "", "get", "cs", "nosuch"); err == nil || !strings.Contains(out, `componentstatus "nosuch" not found`) {
			t.Errorf("kubectl get cs nosuch: %v\n%s", err, out)
		}
	})
	t.Run("watch", func(t *testing.T) {
		k.must(t, "", "create", "configmap", "watched")
		out, _ := k.run(t, "", "get", "configmaps", "--watch", "--request-timeout=3s")
		contains(t, out, "watched")
	})
	t.Run("explain", func(t *testing.T) {
		contains(t, k.must(t, "", "explain", "leases.spec"), "holderIdentity")
		// Built-in resources' fields are described as in kube's documents (all of
		// kubectl explain's answers: TestKubectlOpenAPIAsKube).
		contains(t, k.must(t, "", "explain", "deployments.spec.replicas"), "Number of desired pods.")
	})
	t.Run("logs and exec of a pending pod", func(t *testing.T) {
		// No kubelet runs: kube-apiserver answers a Pod on no node with an empty log
		// and refuses to stream to it; kubectl says what it said.
		if out, err := k.run(t, "", "create", "serviceaccount", "default"); err != nil && !strings.Contains(out, "AlreadyExists") {
			t.Fatalf("kubectl create serviceaccount default: %v\n%s", err, out)
		}
		k.must(t, "", "run", "pending", "--image=registry.k8s.io/pause:3.10")
		if out := k2.must(t, "", "logs", "pending"); out != "" {
			t.Errorf("kubectl logs of a pod on no node: %q, want nothing", out)
		}
		out, err := k2.run(t, "", "logs", "pending", "-c", "nope")
		if err == nil || !strings.Contains(out, "container nope is not valid for pod pending") {
			t.Errorf("kubectl logs of an unknown container: %v\n%s", err, out)
		}
		for _, args := range [][]string{{"exec", "pending", "--", "ls"}, {"exec", "-i", "pending", "--", "sh"}, {"attach", "pending"}} {
			out, err := k.run(t, "", args...)
			if err == nil || !strings.Contains(out, "Error from server (BadRequest): pod pending does not have a host assigned") {
				t.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		// A node whose kubelet does not listen: kube's answers, the WebSocket stream's
		// from kube's own translation.
		k.must(t, "apiVersion: v1\nkind: Node\nmetadata:\n  name: deaf\n", "apply", "-f", "-")
		k.must(t, "", "patch", "node", "deaf", "--subresource=status", "--type=merge", "-p",
			`{"status":{"addresses":[{"type":"InternalIP","address":"127.0.0.1"}],"daemonEndpoints":{"kubeletEndpoint":{"Port":1}}}}`)
		k.must(t, "", "run", "placed", "--image=registry.k8s.io/pause:3.10", `--overrides={"spec":{"nodeName":"deaf"}}`)
		refused := "dial tcp 127.0.0.1:1: connect: connection refused"
		out, err = k2.run(t, "", "logs", "placed")
		if err == nil || !strings.Contains(out, `Error from server: Get "https://127.0.0.1:1/containerLogs/default/placed/placed": `+refused) {
			t.Errorf("kubectl logs of a pod on a deaf node: %v\n%s", err, out)
		}
		out, err = k.run(t, "", "exec", "placed", "--", "ls")
		if err == nil || !strings.Contains(out, `error: Internal error occurred: error sending request: Post "https://127.0.0.1:1/exec/default/placed/placed?command=ls&error=1&output=1": `+refused) {
			t.Errorf("kubectl exec into a pod on a deaf node: %v\n%s", err, out)
		}
		// A pod on a node is deleted gracefully: Terminating for its 30 s (no kubelet
		// here deletes it then), until a deletion with no grace.
		contains(t, k.must(t, "", "delete", "pod", "placed", "--wait=false"), `pod "placed" deleted`)
		contains(t, k2.must(t, "", "get", "pod", "placed", "--no-headers"), "Terminating")
		contains(t, k.must(t, "", "get", "pod", "placed", "-o", "jsonpath={.metadata.deletionGracePeriodSeconds}"), "30")
		contains(t, k2.must(t, "", "delete", "pod", "placed", "--grace-period=0", "--force"), `pod "placed" force deleted`)
		if out, err := k.run(t, "", "get", "pod", "placed"); err == nil || !strings.Contains(out, `pods "placed" not found`) {
			t.Errorf("kubectl get of the pod force deleted: %v\n%s", err, out)
		}
	})
	t.Run("cascade", func(t *testing.T) {
		for _, cascade := range []string{"background", "foreground", "orphan"} {
			owner, dep := "owner-"+cascade, "dep-"+cascade
			k.must(t, "", "create", "configmap", owner)
			uid := k.must(t, "", "get", "configmap", owner, "-o", "jsonpath={.metadata.uid}")
			manifest := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: %s\n    uid: %s\n    blockOwnerDeletion: true\n", dep, owner, uid)
			k2.must(t, manifest, "apply", "-f", "-")
			contains(t, k2.must(t, "", "delete", "configmap", owner, "--cascade="+cascade), `configmap "`+owner+`" deleted`)
			if cascade == "orphan" {
				// Orphaned once the owner is gone, or soon after if the collector learned
				// of the dependent late (its informer behind the owner's).
				refs := ""
				for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
					if refs = k.must(t, "", "get", "configmap", dep, "-o", "jsonpath={.metadata.ownerReferences}"); refs == "" {
						break
					}
				}
				if refs != "" {
					t.Errorf("the orphaned dependent still has owners: %s", refs)
				}
				continue
			}
			k.must(t, "", "wait", "--for=delete", "configmap/"+dep, "--timeout=30s")
		}
	})
	t.Run("services, APIServices and PriorityClasses as Kubernetes prints them", func(t *testing.T) {
		contains(t, k.must(t, "", "create", "service", "nodeport", "web", "--tcp=80:8080"), "service/web created")
		contains(t, k2.must(t, "", "get", "service", "web"), "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "NodePort", "10.0.0.", "<none>", "80:3", "/TCP")
		contains(t, k2.must(t, "", "get", "service", "kubernetes"), "ClusterIP", "10.0.0.1", "443/TCP")
		contains(t, k.must(t, "", "get", "ipaddresses"), "PARENTREF", "services/default/kubernetes", "services/default/web")
		contains(t, k.must(t, "", "get", "servicecidrs"), "CIDRS", "kubernetes", "10.0.0.0/24")
		contains(t, k.must(t, "", "get", "apiservices"), "NAME", "SERVICE", "AVAILABLE", "v1.apps", "Local", "True", "v1.scheduling.k8s.io")
		contains(t, k.must(t, "", "get", "priorityclasses"), "VALUE", "GLOBAL-DEFAULT", "PREEMPTIONPOLICY", "system-node-critical", "2000001000", "PreemptLowerPriority")
		out := kubectlUntil(t, k2, nil, "server 2 ready", func(string) bool { return true }, "get", "--raw", "/readyz?verbose")
		contains(t, out, "[+]autoregister-completion ok", "[+]poststarthook/bootstrap-controller ok")
	})
	t.Run("namespaces", func(t *testing.T) {
		k.must(t, "", "create", "namespace", "e2e")
		k.must(t, "", "-n", "e2e", "create", "configmap", "inside")
		k.must(t, "", "delete", "namespace", "e2e", "--wait=true", "--timeout=30s")
		out, err := k.run(t, "", "get", "namespace", "e2e")
		if err == nil {
			t.Fatalf("namespace still there:\n%s", out)
		}
	})
}

// Real clients outside the version skew KEP-4330 allows are seen by what they send:
// kubectl (whatever release is on PATH) by its User-Agent, against the allowance
// [minimum compatibility 1.36, emulation 1.37 + 1].
func TestClientSkewOfRealKubectl(t *testing.T) {
	t.Parallel()
	k, _ := startServer(t, buildConcord(t))
	var client struct {
		ClientVersion struct{ Major, Minor string } `json:"clientVersion"`
	}
	if err := json.Unmarshal([]byte(k.must(t, "", "version", "--client", "-o", "json")), &client); err != nil {
		t.Fatal(err)
	}
	minor, err := strconv.Atoi(strings.TrimRight(client.ClientVersion.Minor, "+"))
	if err != nil {
		t.Fatalf("kubectl's minor version %q: %v", client.ClientVersion.Minor, err)
	}
	k.must(t, "", "get", "namespaces")
	series := fmt.Sprintf(`concord_client_version_skew_requests_total{client="kubectl",client_version="%s.%d"}`, client.ClientVersion.Major, minor)
	metrics := k.must(t, "", "get", "--raw", "/metrics")
	if outside := minor < 36 || minor > 38; outside != strings.Contains(metrics, series) {
		t.Errorf("kubectl 1.%d, outside [1.36, 1.38]: %v; the metrics have %s: %v", minor, outside, series, !outside)
	}
}
