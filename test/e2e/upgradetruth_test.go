package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/test/ports"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// groupedTemplate sets template.spec.schedulingGroup.podGroupName, a field of
// release 1.36: a server of 1.35 does not know it.
const groupedTemplate = `apiVersion: v1
kind: PodTemplate
metadata:
  name: grouped
  namespace: default
template:
  spec:
    containers:
    - name: c
      image: busybox
    schedulingGroup:
      podGroupName: g1
`

// groupedKey is where the PodTemplate is stored.
const groupedKey = "/registry/core/podtemplates/default/grouped"

// Issue 31's reproduction, as a user meets it. A server of 1.37 (minimum
// compatibility 1.36) stores a PodTemplate with a 1.36 field. upgrade-check refuses the
// rollback to 1.35 and names the field; a server of 1.35 refuses to join, even with
// the 1.37 server stopped, writing nothing; the field stays in etcd. With the minimum
// compatibility version lowered the field still blocks; cleared, the rollback is
// approved and the 1.35 server joins.
func TestRollbackKeepsFields(t *testing.T) {
	t.Parallel()
	bin := buildConcord(t)
	dir := t.TempDir()
	etcd := etcdtest.Start(t)
	endpoints := strings.Join(etcd.Endpoints(), ",")
	dataA, portA := filepath.Join(dir, "a"), fmt.Sprint(ports.Free(t))
	serverA := func(extra ...string) (*kubectl, func()) {
		logs, stop := stoppable(t, bin, append([]string{"server", "--etcd-servers", endpoints, "--data-dir", dataA,
			"--secure-port", portA, "--server-id", "server-a",
			// schedulingGroup's gate, alpha in 1.37: without it the server drops the field, as kube does.
			"--feature-gates", "GenericWorkload=true"}, extra...)...)
		k := newKubectl(t, filepath.Join(dataA, "admin.kubeconfig"))
		waitForFile(t, filepath.Join(dataA, "admin.kubeconfig"), logs)
		kubectlUntil(t, k, logs, "server a ready", func(out string) bool { return out == "ok" }, "get", "--raw", "/readyz")
		waitServing(t, logs)
		return k, stop
	}
	k, stopA := serverA()
	k.must(t, groupedTemplate, "apply", "-f", "-")
	if got := k.must(t, "", "get", "podtemplate", "grouped", "-o", "jsonpath={.template.spec.schedulingGroup.podGroupName}"); got != "g1" {
		t.Fatalf("the 1.36 field was not stored: %q", got)
	}
	kubectlUntil(t, k, nil, "the VersionSkew report of server a", func(out string) bool { return out == "1.36" },
		"get", "versionskew", "cluster", "-o", "jsonpath={.status.components[?(@.name==\"server-a\")].minCompatibilityVersion}")

	out, err := upgradeCheck(t, bin, dataA, "1.35")
	if err == nil {
		t.Fatalf("upgrade-check approved the rollback:\n%s", out)
	}
	contains(t, out, "Rollback from 1.37 to 1.35, emulating 1.35.",
		"Blocked: release 1.35 is below the servers' minimum compatibility version, 1.36.",
		"field template.spec.schedulingGroup of v1, which release 1.35 does not know (introduced in 1.36), is set in 1 object",
		"(default/grouped)",
		"Error: rollback from 1.37 to 1.35 is not safe: the servers' minimum compatibility version is 1.36; ")
	if !regexp.MustCompile(`(?m)^podtemplates +\S+ +v1 +BLOCKED +clear template\.spec\.schedulingGroup, or target 1\.36\+`).MatchString(out) {
		t.Errorf("the podtemplates row does not block on the field:\n%s", out)
	}

	// While the fleet runs, a server of 1.35 refuses to join it, writing nothing.
	written := watchWrites(t, etcd)
	b := exec.CommandContext(t.Context(), bin, "server", "--etcd-servers", endpoints, "--data-dir", filepath.Join(dir, "b"),
		"--secure-port", fmt.Sprint(ports.Free(t)), "--server-id", "server-b", "--binary-version", "1.35")
	bout, err := b.CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(bout)), "\n")
	if err == nil || !strings.HasPrefix(lines[len(lines)-1], "Error: release below the minimum compatibility version of the servers sharing this etcd: release 1.35 cannot join server-a (release 1.37, --min-compatibility-version=1.36)") {
		t.Fatalf("the 1.35 server joined a fleet at minimum compatibility 1.36: %v\n%s", err, bout)
	}
	if keys := written("server-b"); len(keys) > 0 {
		t.Errorf("the refused server wrote %v", keys)
	}
	if v := stored(t, etcd, groupedKey); !strings.Contains(v, `"podGroupName":"g1"`) {
		t.Errorf("the field is gone from etcd: %s", v)
	}

	// Lowered: the fleet no longer blocks, the field does.
	stopA()
	k, _ = serverA("--min-compatibility-version", "1.35")
	out, err = upgradeCheck(t, bin, dataA, "1.35")
	if err == nil || strings.Contains(out, "minimum compatibility version is") {
		t.Fatalf("upgrade-check at minimum compatibility 1.35: %v\n%s", err, out)
	}
	contains(t, out, "template.spec.schedulingGroup", "(default/grouped)")
	k.must(t, "", "patch", "podtemplate", "grouped", "--type", "json", "-p", `[{"op":"remove","path":"/template/spec/schedulingGroup"}]`)
	eventually(t, "upgrade-check approving the rollback", func() bool {
		out, err = upgradeCheck(t, bin, dataA, "1.35")
		return err == nil
	})
	contains(t, out, "Rollback from 1.37 to 1.35 is safe")
	dataB := filepath.Join(dir, "b")
	logs := process(t, bin, "server", "--etcd-servers", endpoints, "--data-dir", dataB, "--secure-port", fmt.Sprint(ports.Free(t)),
		"--server-id", "server-b", "--binary-version", "1.35")
	waitForFile(t, filepath.Join(dataB, "admin.kubeconfig"), logs)
	if got := newKubectl(t, filepath.Join(dataB, "admin.kubeconfig")).must(t, "", "get", "podtemplate", "grouped", "-o", "name"); strings.TrimSpace(got) != "podtemplate/grouped" {
		t.Errorf("the 1.35 server reads %q", got)
	}
}

// upgradeCheck runs `concord upgrade-check --to-version to` with the admin kubeconfig
// of the server whose data directory is data. At -v=3 client-go logs every request
// its client-side limit holds back: the check reads one request at a time and must
// never wait on that limit (at client-go's default it waited about 5 s a run).
func upgradeCheck(t *testing.T, bin, data, to string) (string, error) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), bin, "upgrade-check", "--kubeconfig", filepath.Join(data, "admin.kubeconfig"), "--to-version", to, "-v=3").CombinedOutput()
	if strings.Contains(string(out), "client-side throttling") {
		t.Errorf("upgrade-check waited on its client-side limit:\n%s", out)
	}
	return string(out), err
}

// watchWrites watches every key of etcd from now; the function it returns stops the
// watch and lists the keys written since whose value mentions what.
func watchWrites(t *testing.T, etcd *clientv3.Client) func(what string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	ch := etcd.Watch(ctx, "/", clientv3.WithPrefix(), clientv3.WithCreatedNotify())
	if resp := <-ch; !resp.Created {
		t.Fatalf("watching etcd: %v", resp.Err())
	}
	var (
		mu   sync.Mutex
		puts = map[string]string{}
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for resp := range ch {
			mu.Lock()
			for _, ev := range resp.Events {
				puts[string(ev.Kv.Key)] += string(ev.Kv.Value)
			}
			mu.Unlock()
		}
	}()
	return func(what string) []string {
		cancel()
		<-done
		var keys []string
		for k, v := range puts {
			if strings.Contains(k, what) || strings.Contains(v, what) {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		return keys
	}
}

// eventually waits until ok holds (60 s).
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !ok(); time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// stored is the value of key in etcd.
func stored(t *testing.T, etcd *clientv3.Client, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	resp, err := etcd.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading %s: %v (%d keys)", key, err, len(resp.Kvs))
	}
	return string(resp.Kvs[0].Value)
}

// docs/compatibility.md's example without --enable-priority-and-fairness=false: at
// emulation 1.27 flowcontrol v1 is not served, and the server refuses to start, in one
// line, before it writes anything (the cluster credentials were written first once).
func TestRefusedStartWritesNothing(t *testing.T) {
	t.Parallel()
	bin := buildConcord(t)
	etcd := etcdtest.Start(t)
	// Each read has its own bound: the refused start between them may take longer on a
	// loaded machine.
	count := func() *clientv3.GetResponse {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		resp, err := etcd.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	before := count()
	out, err := exec.CommandContext(t.Context(), bin, "server", "--etcd-servers", strings.Join(etcd.Endpoints(), ","), "--data-dir", t.TempDir(),
		"--secure-port", "0", "--binary-version=1.30", "--emulated-version=1.27").CombinedOutput()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err == nil || lines[len(lines)-1] != "Error: "+"--enable-priority-and-fairness needs flowcontrol.apiserver.k8s.io/v1 served (see --runtime-config), or pass --enable-priority-and-fairness=false" {
		t.Fatalf("want a refusal naming the flag: %v\n%s", err, out)
	}
	after := count()
	if after.Header.Revision != before.Header.Revision || after.Count != 0 {
		t.Errorf("the refused server wrote to etcd: revision %d, then %d; %d keys", before.Header.Revision, after.Header.Revision, after.Count)
	}
}

// After a restart, /readyz passes no later than the first write is accepted: writes
// that come earlier wait (or get 503), and a /readyz asked right after the first
// accepted write passes.
func TestNoWriteBeforeReady(t *testing.T) {
	t.Parallel()
	bin := buildConcord(t)
	data, port := t.TempDir(), fmt.Sprint(ports.Free(t))
	args := []string{"server", "--data-dir", data, "--secure-port", port}
	logs, stop := stoppable(t, bin, args...)
	kubeconfig := filepath.Join(data, "admin.kubeconfig")
	waitForFile(t, kubeconfig, logs)
	cfg := loadKubeconfig(t, kubeconfig)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cfg.ca)
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	call := func(method, path, body string) int {
		req, err := http.NewRequestWithContext(t.Context(), method, cfg.server+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+cfg.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0 // not listening yet
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	// The kubeconfig is written before the server is ready: the first start ends
	// first, so that the interrupt stops a server, not its start.
	waitServing(t, logs)
	stop()
	logs = process(t, bin, args...)
	refused := 0
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		code := call(http.MethodPost, "/api/v1/namespaces/default/configmaps", `{"metadata":{"generateName":"early-"}}`)
		if code == http.StatusCreated {
			break
		}
		if code != 0 && code != http.StatusServiceUnavailable {
			t.Fatalf("a write while the server starts: %d\n%s", code, logs)
		}
		if refused++; time.Now().After(deadline) {
			t.Fatalf("no write accepted within a minute of the restart\n%s", logs)
		}
	}
	if code := call(http.MethodGet, "/readyz", ""); code != http.StatusOK {
		t.Errorf("/readyz answers %d right after the first write was accepted", code)
	}
	t.Logf("%d writes refused or unanswered before the first was accepted", refused)
}

// A StorageState status that does not fit its schema is a 422 naming the field, and
// the server logs no field-manager failure: the error is the client's.
func TestMalformedStorageStateStatus(t *testing.T) {
	t.Parallel()
	bin := buildConcord(t)
	data := t.TempDir()
	logs := process(t, bin, "server", "--data-dir", data, "--secure-port", fmt.Sprint(ports.Free(t)))
	k := newKubectl(t, filepath.Join(data, "admin.kubeconfig"))
	waitForFile(t, filepath.Join(data, "admin.kubeconfig"), logs)
	kubectlUntil(t, k, logs, "the configmaps StorageState", func(out string) bool { return strings.TrimSpace(out) == "storagestate.migration.k8s.io/configmaps" },
		"get", "storagestate", "configmaps", "-o", "name")
	out, err := k.run(t, "", "patch", "storagestate", "configmaps", "--subresource=status", "--type=merge",
		"-p", `{"status":{"persistedStorageVersionHashes":[1]}}`)
	if err == nil || !strings.Contains(out, "is invalid") || !strings.Contains(out, "status.persistedStorageVersionHashes[0]: Invalid value") {
		t.Fatalf("a malformed status: %v\n%s", err, out)
	}
	if strings.Contains(logs.String(), "SHOULD NOT HAPPEN") {
		t.Errorf("the server logs a field-manager failure for the client's error:\n%s", logs)
	}
}
