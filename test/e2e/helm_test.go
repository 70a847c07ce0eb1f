package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd"
	"github.com/concordproject/concord/test/kubepeer"
)

// helmReleases are the helm clients the chart is installed with, and how each writes:
// 3.x creates and then patches (client-side three-way merges, strategic merge
// patches), 4.x applies server-side.
var helmReleases = []struct{ release, operation string }{{"3.22.0", "Update"}, {"4.3.1", "Apply"}}

// TestHelmChart installs, upgrades, rolls back and uninstalls an ordinary chart (a
// StatefulSet with a PersistentVolumeClaim template, its headless Service, a
// NetworkPolicy, a PodDisruptionBudget and a ConfigMap) with each helm client against
// the concord binary, and checks through kubectl what each step left: what
// TestHelmChartOnKubeAPIServer finds on kube-apiserver 1.37.2.
func TestHelmChart(t *testing.T) {
	t.Parallel()
	k, _ := startServer(t, buildConcord(t))
	for _, hr := range helmReleases {
		t.Run("helm-"+hr.release, func(t *testing.T) { helmLifecycle(t, k, newHelm(t, hr.release, k.kubeconfig), hr.operation) })
	}
}

// TestHelmChartOnKubeAPIServer runs TestHelmChart's steps against a kube-apiserver of
// the release Concord builds against, to show that what they expect is kube's
// behaviour. It runs on demand, after test/kubepeer/build.sh kube-apiserver 1.37.2:
//
//	CONCORD_KUBEPEER=1 go test ./test/e2e -run TestHelmChartOnKubeAPIServer
func TestHelmChartOnKubeAPIServer(t *testing.T) {
	t.Parallel()
	if os.Getenv("CONCORD_KUBEPEER") != "1" {
		t.Skip("CONCORD_KUBEPEER=1 runs it, after test/kubepeer/build.sh kube-apiserver 1.37.2")
	}
	bin, err := kubepeer.Binary("kube-apiserver", "1.37.2")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m, err := etcd.StartLoopback(t.Context(), filepath.Join(dir, "etcd"), etcd.WithUnsafeNoFsync(), etcd.WithLogLevel("error"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	var logs bytes.Buffer
	p, err := kubepeer.Start(t.Context(), kubepeer.Options{Binary: bin, Dir: filepath.Join(dir, "peer"), EtcdServers: m.Endpoints(), Log: &logs})
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	t.Cleanup(p.Stop)
	k := newKubectl(t, p.Kubeconfig)
	for _, hr := range helmReleases {
		t.Run("helm-"+hr.release, func(t *testing.T) { helmLifecycle(t, k, newHelm(t, hr.release, k.kubeconfig), hr.operation) })
	}
}

// helmLifecycle installs testdata/chart with h in a namespace of its own, upgrades it
// twice (the second time unchanged), tries an upgrade kube refuses, rolls back and
// uninstalls, checking through k what each step left. operation is how h writes
// (the managed fields' operation).
func helmLifecycle(t *testing.T, k *kubectl, h *helm, operation string) {
	ns := "helm-" + strings.ReplaceAll(filepath.Base(h.path), ".", "-")
	chart := filepath.Join("testdata", "chart")

	h.must(t, "install", "store", chart, "--namespace", ns, "--create-namespace")
	contains(t, k.must(t, "", "-n", ns, "get", "statefulset", "store", "-o",
		"jsonpath={.spec.replicas} {.spec.volumeClaimTemplates[0].spec.resources.requests.storage} {.spec.podManagementPolicy} {.spec.volumeClaimTemplates[0].spec.volumeMode}"),
		"3 1Gi OrderedReady Filesystem")
	contains(t, k.must(t, "", "-n", ns, "get", "networkpolicy", "store", "-o", "jsonpath={.spec.ingress[0].from[0].podSelector.matchLabels.role} {.spec.ingress[0].ports[0].protocol}"),
		"client TCP")
	contains(t, k.must(t, "", "-n", ns, "get", "service,poddisruptionbudget,configmap", "-o", "name"),
		"service/store", "poddisruptionbudget.policy/store", "configmap/store")

	h.must(t, "upgrade", "store", chart, "--namespace", ns, "--set", "replicas=5", "--set", "allowFrom=frontend", "--set", "config.maxmemory=128mb")
	contains(t, k.must(t, "", "-n", ns, "get", "statefulset", "store", "-o", "jsonpath={.spec.replicas} {.metadata.generation}"), "5 2")
	contains(t, k.must(t, "", "-n", ns, "get", "networkpolicy", "store", "-o", "jsonpath={.spec.ingress[0].from[0].podSelector.matchLabels.role}"), "frontend")
	contains(t, k.must(t, "", "-n", ns, "get", "configmap", "store", "-o", "jsonpath={.data.store\\.conf}"), "maxmemory 128mb")
	contains(t, k.must(t, "", "-n", ns, "get", "statefulset", "store", "-o", "jsonpath={.metadata.managedFields[*].operation}"), operation)

	// The same values again: nothing changes, the StatefulSet keeps its generation.
	h.must(t, "upgrade", "store", chart, "--namespace", ns, "--reuse-values")
	contains(t, k.must(t, "", "-n", ns, "get", "statefulset", "store", "-o", "jsonpath={.spec.replicas} {.metadata.generation}"), "5 2")

	// What kube refuses, helm reports with kube's cause.
	out, err := h.run(t, "upgrade", "store", chart, "--namespace", ns, "--set", "replicas=-1")
	if err == nil || !strings.Contains(out, "spec.replicas: Invalid value: -1: must be greater than or equal to 0") {
		t.Errorf("upgrade to replicas=-1 answered %v:\n%s", err, out)
	}

	h.must(t, "rollback", "store", "1", "--namespace", ns)
	contains(t, k.must(t, "", "-n", ns, "get", "statefulset", "store", "-o", "jsonpath={.spec.replicas}"), "3")
	contains(t, k.must(t, "", "-n", ns, "get", "networkpolicy", "store", "-o", "jsonpath={.spec.ingress[0].from[0].podSelector.matchLabels.role}"), "client")
	contains(t, h.must(t, "history", "store", "--namespace", ns), "Rollback to 1")

	h.must(t, "uninstall", "store", "--namespace", ns)
	if out := k.must(t, "", "-n", ns, "get", "statefulsets,services,networkpolicies,poddisruptionbudgets,configmaps,secrets", "-o", "name"); strings.Contains(out, "store") {
		t.Errorf("after uninstall, left:\n%s", out)
	}
	if out, err := h.run(t, "status", "store", "--namespace", ns); err == nil || !strings.Contains(out, "release: not found") {
		t.Errorf("helm status after uninstall answered %v:\n%s", err, out)
	}
}

// helm runs one helm client against one kubeconfig, with its own configuration,
// cache and data directories.
type helm struct {
	path, kubeconfig string
	env              []string
}

// newHelm finds the helm client of a release that test/kubepeer/build.sh built, or
// skips (fails where CONCORD_CONFORMANCE=required: CI builds it).
func newHelm(t *testing.T, release, kubeconfig string) *helm {
	t.Helper()
	path, err := kubepeer.Binary("helm", release)
	if errors.Is(err, kubepeer.ErrNotBuilt) && os.Getenv("CONCORD_CONFORMANCE") != "required" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
		"KUBECACHEDIR="+filepath.Join(home, "kube")) // not another test's discovery of a reused port
	return &helm{path: path, kubeconfig: kubeconfig, env: env}
}

func (h *helm) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.path, append([]string{"--kubeconfig", h.kubeconfig}, args...)...)
	cmd.Env = h.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// must runs helm and fails the test on error.
func (h *helm) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := h.run(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}
