package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/test/ports"
)

// `concord controller-manager` as a component of the control plane with versions of its
// own (KEP-4330): started two releases behind the server, with its StorageVersionAPI
// gate off, it announces its versions on its identity lease and in its requests'
// header; the servers' version skew controller reports it outside the allowance
// (`kubectl get versionskew`, an Event on its lease), `concord upgrade-check` refuses,
// the server counts its requests as out of skew, and its migration trigger works from
// discovery alone (the audit log shows no StorageVersion request of its). Replaced by
// one of the server's release with the gate on, the control plane is within the
// allowance again and the trigger watches StorageVersions.
func TestControllerManagerVersions(t *testing.T) {
	t.Parallel()
	bin := buildConcord(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "server")
	policy := filepath.Join(dir, "audit-policy.yaml")
	auditLog := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: ["system:concord:controller-manager"]
- level: None
`), 0o600); err != nil {
		t.Fatal(err)
	}
	serverLogs := process(t, bin, "server", "--data-dir", data, "--secure-port", fmt.Sprint(ports.Free(t)),
		"--disable-storage-migration", "--audit-policy-file", policy, "--audit-log-path", auditLog)
	admin := filepath.Join(data, "admin.kubeconfig")
	waitForFile(t, admin, serverLogs)
	kc := controllerManagerKubeconfig(t, bin, data)
	k := newKubectl(t, admin)

	// Two releases behind the server's minimum compatibility version 1.36.
	oldLogs, stopOld := stoppable(t, bin, "controller-manager", "--kubeconfig", kc, "--id", "cm-old",
		"--emulation-version", "1.35", "--feature-gates", "StorageVersionAPI=false")
	status := kubectlUntil(t, k, oldLogs, "the old controller manager outside the allowance", func(out string) bool {
		return strings.HasPrefix(out, "False|") && strings.Contains(out, "controller-manager cm-old (1.37, emulating 1.35")
	}, "get", "versionskew", "cluster", "-o", `jsonpath={.status.conditions[?(@.type=="WithinAllowance")].status}|{.status.conditions[?(@.type=="WithinAllowance")].message}`)
	if !strings.Contains(status, "is outside [1.36, 1.37]") {
		t.Errorf("condition message: %s", status)
	}
	lease := k.must(t, "", "get", "lease", "-n", "kube-system", "cm-old", "-L", "concord.io/emulation-version,concord.io/controller-identity")
	if !strings.Contains(lease, "1.35") || !strings.Contains(lease, "controller-manager") {
		t.Errorf("the identity lease does not announce the controller manager's versions:\n%s", lease)
	}
	kubectlUntil(t, k, oldLogs, "the Warning Event on cm-old's lease", func(out string) bool {
		return strings.Contains(out, "VersionSkewOutOfAllowance cm-old")
	}, "get", "events.events.k8s.io", "-n", "kube-system", "-o", `jsonpath={range .items[*]}{.reason} {.regarding.name}{"\n"}{end}`)
	check := exec.CommandContext(t.Context(), bin, "upgrade-check", "--kubeconfig", admin, "--to-version", "1.37")
	out, err := check.CombinedOutput()
	var ee *exec.ExitError
	if !errorsAs(err, &ee) || !strings.Contains(string(out), "the control plane is outside the version skew allowance now") ||
		!strings.Contains(string(out), "cm-old") {
		t.Errorf("upgrade-check with the old controller manager: %v, want exit 1 naming the skew\n%s", err, out)
	}
	kubectlUntil(t, k, oldLogs, "the server counting the old controller manager's requests", func(out string) bool {
		return strings.Contains(out, `concord_client_version_skew_requests_total{client="concord",client_version="1.35"}`)
	}, "get", "--raw", "/metrics")
	kubectlUntil(t, k, oldLogs, "storage states from discovery", func(out string) bool { return strings.Contains(out, "configmaps") },
		"get", "storagestates", "-o", "name")
	if watches := storageVersionRequests(t, auditLog); len(watches) != 0 {
		t.Errorf("the controller manager with StorageVersionAPI=false watched StorageVersions: %v", watches)
	}
	stopOld()
	// Stopped, it marked its lease expired; the servers' garbage collector deletes it.
	for deadline := time.Now().Add(30 * time.Second); ; {
		out, err := k.run(t, "", "get", "lease", "-n", "kube-system", "cm-old")
		if err != nil && strings.Contains(out, "NotFound") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the old controller manager's lease is still there: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// One of the server's release, every gate at its default.
	newLogs := process(t, bin, "controller-manager", "--kubeconfig", kc, "--id", "cm-new")
	kubectlUntil(t, k, newLogs, "the new controller manager alone, within the allowance", func(out string) bool {
		return strings.HasPrefix(out, "True|") && strings.Contains(out, "cm-new") && !strings.Contains(out, "cm-old")
	}, "get", "versionskew", "cluster", "-o", `jsonpath={.status.conditions[?(@.type=="WithinAllowance")].status}|{.status.components[*].name}`)
	deadline := time.Now().Add(30 * time.Second)
	for len(storageVersionRequests(t, auditLog)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the controller manager with StorageVersionAPI on never read StorageVersions; logs:\n%s", newLogs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	out, _ = exec.CommandContext(t.Context(), bin, "upgrade-check", "--kubeconfig", admin, "--to-version", "1.37").CombinedOutput()
	if !strings.Contains(string(out), "WithinAllowance=True") || !strings.Contains(string(out), "would be within the allowance") {
		t.Errorf("upgrade-check with the new controller manager:\n%s", out)
	}
}

// kubectlUntil runs kubectl args until ok accepts their output, and returns it. It
// waits for as long as that output, or the log of p (a process the awaited work is up
// to; nil when none), moves (waitMoving).
func kubectlUntil(t *testing.T, k *kubectl, p *running, what string, ok func(string) bool, args ...string) string {
	t.Helper()
	var out string
	var err error
	defer func() {
		if t.Failed() && out != "" {
			t.Logf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if t.Failed() && p != nil {
			t.Logf("logs of %s:\n%s", filepath.Base(p.cmd.Path), p.Tail(100))
		}
	}()
	waitMoving(t, what, func() (bool, string) {
		out, err = k.run(t, "", args...)
		if err == nil && ok(out) {
			return true, ""
		}
		if p == nil {
			return false, out
		}
		exitedEarly(t, p, what)
		return false, fmt.Sprint(out, p.Len())
	})
	return out
}

// storageVersionRequests returns the controller manager's watches of StorageVersions
// in the audit log (their request URIs): its trigger's informer (its migrator rewrites
// the StorageVersion objects like any resource's, without watching them).
func storageVersionRequests(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			Verb       string                     `json:"verb"`
			RequestURI string                     `json:"requestURI"`
			User       struct{ Username string }  `json:"user"`
			ObjectRef  *struct{ Resource string } `json:"objectRef"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.User.Username == "system:concord:controller-manager" &&
			e.Verb == "watch" && e.ObjectRef != nil && e.ObjectRef.Resource == "storageversions" {
			out = append(out, e.RequestURI)
		}
	}
	return out
}
