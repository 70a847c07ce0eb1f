package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/test/binary"
	"github.com/concordproject/concord/test/logbuf"
	"github.com/concordproject/concord/test/ports"
	"github.com/concordproject/concord/test/progress"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// buildConcord returns the path of the concord binary of this checkout (see
// test/binary).
func buildConcord(t *testing.T) string {
	t.Helper()
	bin, err := binary.Concord()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// running is a child process a test started: its output, which the test may read
// while the process writes it, and its end.
type running struct {
	*logbuf.Buffer
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited
	err    error         // how it exited; set before exited is closed
}

// start starts bin with args; the caller stops it.
func start(t *testing.T, bin string, args ...string) *running {
	t.Helper()
	p := &running{Buffer: &logbuf.Buffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.Buffer, p.Buffer
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	return p
}

// process runs a command until the test ends, then interrupts it and waits.
func process(t *testing.T, bin string, args ...string) *running {
	t.Helper()
	p, _ := stoppable(t, bin, args...)
	return p
}

// stoppable runs a command until stop is called or the test ends, whichever comes
// first; stop interrupts it and waits (once).
func stoppable(t *testing.T, bin string, args ...string) (p *running, stop func()) {
	t.Helper()
	p = start(t, bin, args...)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = p.cmd.Process.Signal(os.Interrupt)
			select {
			case <-p.exited:
				if p.err != nil {
					t.Errorf("%s %s exited with %v\n%s", filepath.Base(bin), args[0], p.err, p.String())
				}
			case <-time.After(30 * time.Second):
				_ = p.cmd.Process.Kill()
				t.Errorf("%s %s did not stop on SIGINT", filepath.Base(bin), args[0])
			}
		})
	}
	t.Cleanup(stop)
	return p, stop
}

// waitMoving polls cond until it reports done. It fails when the mark cond reports
// (what the awaited work has done so far) has not changed for 30s, and in any case
// after five minutes: work that is slow on a loaded machine is waited for as long as
// it moves, and a hang still ends with the test's own message.
func waitMoving(t *testing.T, what string, cond func() (done bool, mark string)) {
	t.Helper()
	progress.Wait(t, what, progress.Limits{Stall: 30 * time.Second, Bound: 5 * time.Minute}, func() (bool, string, error) {
		done, mark := cond()
		return done, mark, nil
	})
}

// exitedEarly fails the test if p, which the awaited work needs, has exited.
func exitedEarly(t *testing.T, p *running, what string) {
	t.Helper()
	select {
	case <-p.exited:
		t.Fatalf("waiting for %s: %s exited (%v); logs:\n%s", what, p.cmd.Path, p.err, p.Tail(100))
	default:
	}
}

// waitForFile waits until path exists, a file p writes once it is ready. It fails at
// once when p exits first, and (waitMoving) when p has neither written output nor
// used CPU for a while.
func waitForFile(t *testing.T, path string, p *running) {
	t.Helper()
	waitMoving(t, path+" written by "+filepath.Base(p.cmd.Path), func() (bool, string) {
		if _, err := os.Stat(path); err == nil {
			return true, ""
		}
		exitedEarly(t, p, path)
		return false, fmt.Sprint(p.Len(), " ", binary.CPUTicks(p.cmd.Process.Pid))
	})
}

// waitServing waits until a concord server p runs has printed that it serves: its
// start has ended, every component ready, so that an interrupt from then on stops a
// running server rather than its start. /readyz can answer ok a moment before the
// start has seen its last component ready.
func waitServing(t *testing.T, p *running) {
	t.Helper()
	waitUntil(t, "the server's start to end", p, func() bool { return strings.Contains(p.String(), "Concord is serving on") })
}

// A server interrupted while it starts, here waiting on an etcd that takes
// connections and never answers, stops as a running one does: exit 0, with a line
// saying it stopped before it was ready. It exited 1 before, which
// TestNoWriteBeforeReady met when its server was stopped a moment after /readyz
// said ok, its start not yet ended.
func TestInterruptedStartExitsCleanly(t *testing.T) {
	t.Parallel()
	bin := buildConcord(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reached := make(chan struct{})
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if conns = append(conns, c); len(conns) == 1 {
				close(reached)
			}
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	p := start(t, bin, "server", "--data-dir", t.TempDir(), "--secure-port", fmt.Sprint(ports.Free(t)),
		"--etcd-servers", "http://"+ln.Addr().String())
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	select {
	case <-reached: // the start waits on etcd from now on
	case <-p.exited:
		t.Fatalf("the server exited before it reached etcd: %v\n%s", p.err, p)
	// A deadline timer: a server that neither connects nor exits in 2 minutes hangs.
	case <-time.After(2 * time.Minute):
		t.Fatalf("the server did not connect to etcd within 2 minutes:\n%s", p)
	}
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	// A deadline timer: a start that does not end within 30s of SIGINT is a failure.
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not stop within 30s of SIGINT during its start:\n%s", p)
	}
	if p.err != nil {
		t.Fatalf("interrupted during its start, the server exited with %v:\n%s", p.err, p)
	}
	if out := p.String(); !strings.Contains(out, `"Stopped before ready" signal="interrupt signal received"`) {
		t.Errorf("no line saying the server stopped before ready:\n%s", out)
	}
}

// The README's HA recipe: one `concord etcd`, servers sharing it, one set of
// credentials that works on every server.
func TestHARecipe(t *testing.T) {
	t.Parallel()
	bin := buildConcord(t)
	dir := t.TempDir()
	client, peer := ports.Free(t), ports.Free(t)
	clientURL, peerURL := fmt.Sprintf("http://127.0.0.1:%d", client), fmt.Sprintf("http://127.0.0.1:%d", peer)
	etcdLogs := process(t, bin, "etcd", "--name", "e1", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "e1="+peerURL)
	var kubeconfigs []string
	for i := 1; i <= 2; i++ {
		data := filepath.Join(dir, fmt.Sprint("server-", i))
		logs := process(t, bin, "server", "--etcd-servers", clientURL, "--data-dir", data, "--secure-port", fmt.Sprint(ports.Free(t)))
		kc := filepath.Join(data, "admin.kubeconfig")
		waitForFile(t, kc, logs)
		kubeconfigs = append(kubeconfigs, kc)
	}
	_ = etcdLogs
	cfgs := make([]*clientcmdConfig, 2)
	for i, kc := range kubeconfigs {
		cfgs[i] = loadKubeconfig(t, kc)
	}
	if cfgs[0].token != cfgs[1].token || !bytes.Equal(cfgs[0].ca, cfgs[1].ca) || cfgs[0].server == cfgs[1].server {
		t.Fatal("the servers' kubeconfigs do not share credentials, or point at the same server")
	}
	k1, k2 := newKubectl(t, kubeconfigs[0]), newKubectl(t, kubeconfigs[1])
	k1.must(t, "", "create", "configmap", "shared", "--from-literal=a=b")
	contains(t, k2.must(t, "", "get", "configmap", "shared", "-o", "jsonpath={.data.a}"), "b")
	// Server 2's credentials against server 1's URL.
	contains(t, k2.must(t, "", "--server", cfgs[0].server, "get", "configmap", "shared"), "shared")

	// A user's kubeconfig, its client certificate signed by the cluster CA of server
	// 1's data directory, works against server 2, and RBAC decides what it may do.
	carolKC := filepath.Join(dir, "carol.kubeconfig")
	if out, err := exec.CommandContext(t.Context(), bin, "kubeconfig", "--data-dir", filepath.Join(dir, "server-1"),
		"--user", "carol", "--group", "dev", "--server", cfgs[1].server, "--out", carolKC).CombinedOutput(); err != nil {
		t.Fatalf("concord kubeconfig: %v\n%s", err, out)
	}
	carol := newKubectl(t, carolKC)
	contains(t, carol.must(t, "", "auth", "whoami"), "carol", "[dev system:authenticated]")
	if out, err := carol.run(t, "", "get", "configmap", "shared"); err == nil || !strings.Contains(out, `User "carol" cannot get resource "configmaps"`) {
		t.Fatalf("carol reads without a grant: %v\n%s", err, out)
	}
	k1.must(t, "", "create", "rolebinding", "dev-view", "--clusterrole=view", "--group=dev")
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := carol.run(t, "", "get", "configmap", "shared", "-o", "jsonpath={.data.a}")
		if err == nil && out == "b" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("carol reads once her group is bound to view: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A fresh `concord server` (its own etcd, nothing stored) starts and stops without
// logging an error or a stack trace. Once it stops, its components' requests in flight
// are cancelled, and client-go logs at error level a response it could not read
// because of that (err="context canceled"): those lines alone are allowed then.
func TestQuietStart(t *testing.T) {
	t.Parallel()
	bin := buildConcord(t)
	data := filepath.Join(t.TempDir(), "data")
	var logs *running
	t.Cleanup(func() { // registered first, run last: once the server has stopped
		stopping := false
		for _, line := range strings.Split(logs.String(), "\n") {
			stopping = stopping || strings.Contains(line, `"Concord server stopping"`)
			if stopping && strings.HasPrefix(line, "E") && strings.Contains(line, `err="context canceled"`) {
				continue
			}
			if strings.HasPrefix(line, "E") || strings.Contains(line, `"level":"error"`) || strings.Contains(line, "stacktrace") {
				t.Errorf("logged: %s", line)
			}
		}
		if !stopping {
			t.Errorf("the server did not log that it was stopping:\n%s", logs)
		}
	})
	logs = process(t, bin, "server", "--data-dir", data, "--secure-port", fmt.Sprint(ports.Free(t)))
	waitForFile(t, filepath.Join(data, "admin.kubeconfig"), logs)
}

type clientcmdConfig struct {
	server, token string
	ca            []byte
}

func loadKubeconfig(t *testing.T, path string) *clientcmdConfig {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return &clientcmdConfig{server: cfg.Host, token: cfg.BearerToken, ca: cfg.CAData}
}

// Every invalid flag makes the command exit non-zero with one line that says what is
// allowed.
func TestInvalidFlags(t *testing.T) {
	t.Parallel()
	bin := buildConcord(t)
	// A port held busy: files named by flags are read before the server listens, so
	// their errors, not the port's, are reported.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = busy.Close() })
	busyPort := fmt.Sprint(busy.Addr().(*net.TCPAddr).Port)
	encryptionConfig := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(encryptionConfig, []byte(shortKeyEncryption), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"server", "--secure-port", "70000"}, "--secure-port 70000 is not between 0 and 65535"},
		{[]string{"server", "--bind-address", "nowhere"}, `--bind-address "nowhere" is not an IP address`},
		{[]string{"server", "--logging-format", "xml"}, "use text or json"},
		{[]string{"server", "--etcd-prefix", "registry"}, "must start with /"},
		{[]string{"server", "--tls-cert-file", "/nonexistent"}, "must be given together"},
		{[]string{"server", "--etcd-servers", "ftp://x"}, "--etcd-servers"},
		{[]string{"server", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"server", "--event-ttl", "0s"}, "--event-ttl 0s must be at least 1s"},
		{[]string{"server", "--resource-quota-sync-period", "10ms"}, "--resource-quota-sync-period 10ms must be at least 1s"},
		{[]string{"server", "--watch-cache-memory-limit", "lots"}, `--watch-cache-memory-limit "lots" must be a non-negative quantity of bytes, such as 4Gi or 512Mi (0: no limit)`},
		{[]string{"server", "--watch-flush-interval", "1s"}, "--watch-flush-interval 1s must be between 0 and 100ms"},
		{[]string{"server", "--max-requests-inflight", "-1"}, "must not be negative"},
		{[]string{"server", "--request-timeout", "0s"}, "--request-timeout 0s must be positive"},
		{[]string{"server", "--http2-max-streams-per-connection", "-1"}, "--http2-max-streams-per-connection -1 must not be negative (0: 100)"},
		{[]string{"server", "--etcd-compaction-interval", "-1m"}, "--etcd-compaction-interval -1m0s must not be negative (0 turns compaction off)"},
		{[]string{"server", "--memory-limit", "lots"}, `--memory-limit "lots" must be a quantity of bytes of at least 64Mi, such as 12Gi`},
		{[]string{"server", "--max-requests-inflight", "0", "--max-mutating-requests-inflight", "0"}, "must be at least 1 with --enable-priority-and-fairness"},
		{[]string{"server", "--runtime-config", "flowcontrol.apiserver.k8s.io/v1=false"}, "--enable-priority-and-fairness needs flowcontrol.apiserver.k8s.io/v1 served"},
		{[]string{"server", "--authorization-mode", "ABAC"}, `--authorization-mode: invalid authorization mode "ABAC": allowed modes are RBAC, AuthenticatedRead, AlwaysAllow, AlwaysDeny`},
		{[]string{"server", "--authorization-mode", "RBAC,RBAC"}, `--authorization-mode: invalid authorization mode: "RBAC" given twice`},
		{[]string{"server", "--authorization-mode", ""}, "--authorization-mode: invalid authorization mode: at least one of RBAC, AuthenticatedRead, AlwaysAllow, AlwaysDeny is required"},
		{[]string{"server", "--runtime-config", "rbac.authorization.k8s.io/v1=false"}, "--authorization-mode=RBAC needs roles.rbac.authorization.k8s.io served in v1"},
		{[]string{"server", "--service-account-issuer", "http://insecure.example.com"}, `--service-account-issuer "http://insecure.example.com" must be an https URL or a name without a colon`},
		{[]string{"server", "--service-account-max-token-expiration", "10m"}, "--service-account-max-token-expiration 10m0s must be 0 (no cap) or at least 1h"},
		{[]string{"server", "--audit-log-path", "audit.log", "--audit-log-format", "xml"}, `--audit-log-format "xml": allowed formats are json, legacy`},
		{[]string{"server", "--audit-policy-file", "/nonexistent", "--audit-log-path", "-"}, `audit policy: failed to read file path "/nonexistent"`},
		{[]string{"server", "--secure-port", busyPort, "--encryption-provider-config", "/nonexistent"}, `invalid encryption provider configuration /nonexistent: open /nonexistent: no such file or directory`},
		{[]string{"server", "--secure-port", busyPort, "--encryption-provider-config", encryptionConfig}, `resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 5, expected one of [16 24 32]`},
		{[]string{"server", "--requestheader-client-ca-file", "/nonexistent"}, `--requestheader-client-ca-file "/nonexistent" cannot be read`},
		{[]string{"server", "--runtime-config", "internal.apiserver.k8s.io/v1alpha1=false"}, "add --feature-gates=StorageVersionAPI=false to turn it off with them"},
		{[]string{"server", "--aggregated-groups", "stable.example.com"}, "--aggregator-kubeconfig and --aggregated-groups must be given together"},
		{[]string{"server", "--service-cluster-ip-range", "nope"}, `--service-cluster-ip-range: "nope" is not a CIDR (e.g. 10.0.0.0/24)`},
		{[]string{"server", "--service-cluster-ip-range", "10.0.0.0/24,10.1.0.0/24,fd00::/64"}, `--service-cluster-ip-range "10.0.0.0/24,10.1.0.0/24,fd00::/64" must be one CIDR (e.g. 10.0.0.0/24), or two of different IP families`},
		{[]string{"server", "--service-cluster-ip-range", "10.0.0.0/24,10.1.0.0/24"}, "two CIDRs must be of different IP families (one IPv4, one IPv6)"},
		{[]string{"server", "--service-cluster-ip-range", "fd00::/48"}, "--service-cluster-ip-range: fd00::/48 is too large: an IPv6 range must be a /64 or smaller"},
		{[]string{"server", "--service-cluster-ip-range", "10.0.0.0/30"}, "--service-cluster-ip-range: 10.0.0.0/30 is too small: a range must hold at least 8 IP addresses"},
		{[]string{"server", "--service-node-port-range", "30000-"}, `--service-node-port-range "30000-" is not a port range such as 30000-32767 (inclusive, ports 1 to 65535)`},
		{[]string{"server", "--service-node-port-range", "0-100"}, `--service-node-port-range "0-100" is not a port range such as 30000-32767 (inclusive, ports 1 to 65535)`},
		{[]string{"server", "--advertise-address", "0.0.0.0"}, `--advertise-address "0.0.0.0" is not a specific IP address`},
		{[]string{"etcd", "--listen-client-urls", "::bad"}, "--listen-client-urls"},
		{[]string{"kubeconfig", "--out", "x"}, "--user is required"},
		{[]string{"kubeconfig", "--user", "u", "--out", "x", "--validity", "-1h"}, "--validity -1h0m0s must be positive"},
		{[]string{"kubeconfig", "--user", "u", "--out", "x"}, "no cluster CA in"},
		// Compatibility versions (KEP-4330).
		{[]string{"server", "--emulation-version", "1.38"}, "emulation version 1.38 is not between [1.34, 1.37]"},
		{[]string{"server", "--emulated-version", "1.30"}, "emulation version 1.30 is not between [1.34, 1.37]"},
		{[]string{"server", "--emulation-version", "1.36.1"}, "patch version not allowed, got: kube=1.36.1"},
		{[]string{"server", "--emulation-version", "1.36", "--min-compatibility-version", "1.37"}, "minCompatibilityVersion version 1.37 is not between [1.34, 1.36]"},
		{[]string{"server", "--feature-gates", "NoSuchGate=true"}, "unrecognized feature gate: NoSuchGate"},
		{[]string{"server", "--runtime-config", "nope.example.com/v1=true"}, "unknown api groups nope.example.com"},
		{[]string{"server", "--emulation-version", "1.36", "--runtime-config", "api/alpha=true"}, "cannot be enabled with emulation version 1.36"},
		{[]string{"server", "--feature-gates", "StorageVersionAPI=true,APIServerIdentity=false"}, "StorageVersionAPI is enabled, but depends on features that are disabled: [APIServerIdentity]"},
		// The controller manager's versions and gates (it takes no --data-dir).
		{[]string{"controller-manager", "--emulation-version", "1.30"}, "emulation version 1.30 is not between [1.34, 1.37]"},
		{[]string{"controller-manager", "--emulation-version", "1.36", "--min-compatibility-version", "1.37"}, "minCompatibilityVersion version 1.37 is not between [1.34, 1.36]"},
		{[]string{"controller-manager", "--feature-gates", "WatchList=true"}, "unrecognized feature gate: WatchList"},
		{[]string{"controller-manager", "--binary-version", "1.2"}, "--binary-version 1.2"},
		{[]string{"controller-manager", "--id", "Not_A_Name"}, `--id "Not_A_Name" must name a lease`},
		{[]string{"controller-manager", "--tls-cert-file", "cert.pem"}, "--tls-cert-file and --tls-private-key-file go together: give both or neither"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := tc.args
			if tc.args[0] != "controller-manager" {
				args = append(args, "--data-dir", t.TempDir())
			}
			// Waited for while it runs (slowly, on a loaded machine); killed if it hangs.
			p := start(t, bin, args...)
			t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.exited })
			waitMoving(t, "the exit", func() (bool, string) {
				select {
				case <-p.exited:
					return true, ""
				default:
					return false, fmt.Sprint(p.Len(), " ", binary.CPUTicks(p.cmd.Process.Pid))
				}
			})
			var ee *exec.ExitError
			if !errorsAs(p.err, &ee) || ee.ExitCode() == 0 {
				t.Fatalf("exit: %v, want a non-zero exit\n%s", p.err, p.String())
			}
			if !strings.Contains(p.String(), tc.want) {
				t.Fatalf("output lacks %q:\n%s", tc.want, p.String())
			}
		})
	}
}

// shortKeyEncryption is an EncryptionConfiguration kube-apiserver refuses: an aescbc
// key of 5 bytes.
const shortKeyEncryption = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc:
      keys:
      - {name: k1, secret: c2hvcnQ=}
`

func errorsAs(err error, target **exec.ExitError) bool { return errors.As(err, target) }

// `concord controller-manager` runs with the least privilege Concord grants it: a
// kubeconfig for user system:concord:controller-manager (a client certificate from
// `concord kubeconfig`) is enough to run every migration and to serve its /metrics,
// and nothing it does is forbidden. Its /metrics (HTTPS) answers only users the
// server authenticates and allows to get the path: 403 without a token, 401 with a
// token the server does not know, 403 for a ServiceAccount without a grant, the
// metrics once a ClusterRole grants it get on /metrics. Without a serving certificate
// given, it serves a self-signed one for its address, with an ECDSA key.
func TestControllerManagerLeastPrivilege(t *testing.T) {
	t.Parallel()
	bin := buildConcord(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "server")
	serverLogs := process(t, bin, "server", "--data-dir", data, "--secure-port", fmt.Sprint(ports.Free(t)), "--disable-storage-migration")
	admin := filepath.Join(data, "admin.kubeconfig")
	waitForFile(t, admin, serverLogs)
	kc := controllerManagerKubeconfig(t, bin, data)
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", ports.Free(t))
	cmLogs := process(t, bin, "controller-manager", "--kubeconfig", kc, "--metrics-bind-address", metricsAddr)
	k := newKubectl(t, admin)
	kubectlUntil(t, k, cmLogs, "migrations by the controller manager", func(out string) bool {
		return strings.Contains(out, "configmaps=True") && strings.Contains(out, "clusterroles=True")
	}, "get", "storageversionmigrations", "-o", "jsonpath={range .items[*]}{.spec.resource.resource}={.status.conditions[?(@.type==\"Succeeded\")].status}{\"\\n\"}{end}")
	checkMetricsAccess(t, k, "https://"+metricsAddr+"/metrics", filepath.Join(data, "pki"))
	checkSelfSignedCertificate(t, metricsAddr)
	if strings.Contains(strings.ToLower(cmLogs.String()), "forbidden") {
		t.Errorf("the controller manager was refused something:\n%s", cmLogs.String())
	}
}

// checkMetricsAccess holds the controller manager's /metrics at url to the
// server's authentication and authorization: tokens, and client certificates of the
// cluster CA (in pki, the server's certificate directory).
func checkMetricsAccess(t *testing.T, k *kubectl, url, pki string) {
	t.Helper()
	k.must(t, "", "create", "serviceaccount", "scraper", "-n", "default")
	token := strings.TrimSpace(k.must(t, "", "create", "token", "scraper", "-n", "default"))
	caCert, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := os.ReadFile(filepath.Join(pki, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	ca := &auth.ClusterCredentials{CACert: caCert, CAKey: caKey}
	certOf := func(validity time.Duration) *tls.Certificate {
		certPEM, keyPEM, err := auth.NewClientCertificate(ca, "cert-scraper", []string{"scrapers"}, validity)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		return &cert
	}
	valid, expired := certOf(time.Hour), certOf(-time.Hour)
	get := func(bearer string, cert *tls.Certificate) (int, []byte) {
		tlsConfig := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // a self-signed certificate
		if cert != nil {
			tlsConfig.Certificates = []tls.Certificate{*cert}
		}
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConfig}}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, body
	}
	refused := func(bearer string, cert *tls.Certificate, code int32, reason metav1.StatusReason, says string) {
		t.Helper()
		got, body := get(bearer, cert)
		st := metav1.Status{}
		if err := json.Unmarshal(body, &st); err != nil || int32(got) != code || st.Code != code || st.Reason != reason || !strings.Contains(st.Message, says) { //nolint:gosec // HTTP codes
			t.Fatalf("GET %s: %d %s, want a Status %d %s saying %q", url, got, body, code, reason, says)
		}
	}
	refused("", nil, http.StatusForbidden, metav1.StatusReasonForbidden, `"system:anonymous"`)
	refused("not-a-token", nil, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "")
	refused(token, nil, http.StatusForbidden, metav1.StatusReasonForbidden, `"system:serviceaccount:default:scraper"`)
	refused("", valid, http.StatusForbidden, metav1.StatusReasonForbidden, `"cert-scraper"`)
	refused("", expired, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "")
	k.must(t, "", "create", "clusterrole", "metrics-reader", "--verb=get", "--non-resource-url=/metrics")
	k.must(t, "", "create", "clusterrolebinding", "scraper", "--clusterrole=metrics-reader", "--serviceaccount=default:scraper", "--group=scrapers")
	// The denials above are cached for up to ten seconds, as kube-controller-manager
	// caches its own.
	for _, who := range []struct {
		token string
		cert  *tls.Certificate
	}{{token: token}, {cert: valid}} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, body := get(who.token, who.cert)
			if code == http.StatusOK {
				contains(t, string(body), "go_goroutines", "concord_storage_migration_objects_migrated_total")
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s as a granted user (certificate: %v): %d %s", url, who.cert != nil, code, body)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}

// checkSelfSignedCertificate checks the certificate served at addr (host:port) when
// none is given: one certificate, signed by its own key (an ECDSA one), for the host
// the server listens on.
func checkSelfSignedCertificate(t *testing.T, addr string) {
	t.Helper()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	dialer := &tls.Dialer{
		NetDialer: &net.Dialer{Timeout: 30 * time.Second},
		Config:    &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the certificate is checked below
	}
	conn, err := dialer.DialContext(t.Context(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) != 1 {
		t.Fatalf("%s serves %d certificates, want one self-signed", addr, len(certs))
	}
	c := certs[0]
	if !bytes.Equal(c.RawIssuer, c.RawSubject) || c.CheckSignature(c.SignatureAlgorithm, c.RawTBSCertificate, c.Signature) != nil {
		t.Errorf("the certificate of %s is not signed by its own key (issuer %s, subject %s)", addr, c.Issuer, c.Subject)
	}
	if err := c.VerifyHostname(host); err != nil {
		t.Errorf("the certificate of %s: %v", addr, err)
	}
	if c.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("the certificate of %s has a %v key, want ECDSA", addr, c.PublicKeyAlgorithm)
	}
}

// controllerManagerKubeconfig writes, with `concord kubeconfig`, a kubeconfig for user
// system:concord:controller-manager (a client certificate of the cluster CA kept under
// the server's data directory data) and returns its path.
func controllerManagerKubeconfig(t *testing.T, bin, data string) string {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "cm.kubeconfig")
	if out, err := exec.CommandContext(t.Context(), bin, "kubeconfig", "--data-dir", data, "--user", "system:concord:controller-manager",
		"--server", loadKubeconfig(t, filepath.Join(data, "admin.kubeconfig")).server, "--out", kc).CombinedOutput(); err != nil {
		t.Fatalf("concord kubeconfig: %v\n%s", err, out)
	}
	return kc
}

// The StorageVersion API disabled as its PRR says: --runtime-config alone is refused
// with the flag to add (TestInvalidFlags); with the gate off and the API served, an
// administrator clears the objects a crashed server left behind, which only servers may write
// while the gate is on; with both off the API is gone.
func TestStorageVersionAPIDisablement(t *testing.T) {
	t.Parallel()
	bin := buildConcord(t)
	data := filepath.Join(t.TempDir(), "data")
	port := fmt.Sprint(ports.Free(t))
	kubeconfig := filepath.Join(data, "admin.kubeconfig")
	run := func(flags ...string) (stop func(crash bool)) {
		t.Helper()
		_ = os.Remove(kubeconfig)
		p := start(t, bin, append([]string{"server", "--data-dir", data, "--secure-port", port}, flags...)...)
		waitForFile(t, kubeconfig, p)
		return func(crash bool) {
			if crash { // nothing withdrawn: what a crashed server leaves behind
				_ = p.cmd.Process.Kill()
				<-p.exited
				return
			}
			_ = p.cmd.Process.Signal(os.Interrupt)
			if <-p.exited; p.err != nil {
				t.Errorf("concord server %v: %v\n%s", flags, p.err, p.String())
			}
		}
	}
	stop := run()
	k := newKubectl(t, kubeconfig)
	waitKubectl(t, k, "the servers' StorageVersions", "core.configmaps", "get", "storageversions", "-o", "name")
	if out, err := k.run(t, "", "delete", "storageversion", "core.configmaps"); err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("the administrator deleting a StorageVersion while the API is on: %v\n%s", err, out)
	}
	stop(true)

	stop = run("--feature-gates=StorageVersionAPI=false", "--runtime-config=internal.apiserver.k8s.io/v1alpha1=true")
	contains(t, k.must(t, "", "get", "storageversions", "-o", "name"), "core.configmaps") // left behind
	if out, err := k.run(t, "apiVersion: internal.apiserver.k8s.io/v1alpha1\nkind: StorageVersion\nmetadata:\n  name: core.secrets\n", "create", "-f", "-"); err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("the administrator creating a StorageVersion: %v\n%s", err, out)
	}
	k.must(t, "", "delete", "storageversions", "--all")
	if out := k.must(t, "", "get", "storageversions", "-o", "name"); strings.TrimSpace(out) != "" {
		t.Errorf("StorageVersions left after deleting them all:\n%s", out)
	}
	stop(false)

	stop = run("--feature-gates=StorageVersionAPI=false")
	defer stop(false)
	if out, err := k.run(t, "", "get", "--raw", "/apis/internal.apiserver.k8s.io/v1alpha1/storageversions"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("StorageVersions with the API off: %v\n%s", err, out)
	}
}
