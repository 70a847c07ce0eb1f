package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/test/ports"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// testUserAgent is the User-Agent of this test's own requests: one the skew detector
// does not count, so that the metric holds the binary's clients alone.
const testUserAgent = "concord-e2e-test"

// skewSeries is the name of the skew detector's counter.
const skewSeries = "concord_client_version_skew_requests_total"

// Concord's own commands are Concord's clients of the build's release (issue 31): a
// binary built without linker flags runs `upgrade-check`, `migrations` and
// `controller-manager` against its server, which counts none of their requests as out of
// skew (they once came as client-go 0.0: User-Agent concord/v0.0.0, no version
// header), and the audit log shows their User-Agent naming the release. A deliberately
// old client, Concord's by its header or kubectl by its User-Agent, is still counted,
// and the log line for the old kubectl names the range kubectl is allowed (one minor
// above the server's).
func TestCommandsAnnounceTheirRelease(t *testing.T) {
	t.Parallel()
	bin := buildConcord(t)
	release, err := compatibility.BuildRelease()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "server")
	policy := filepath.Join(dir, "audit-policy.yaml")
	auditLog := filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\n"+
		"rules:\n- level: Metadata\n  users: [concord-admin]\n- level: None\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serverLogs := process(t, bin, "server", "--data-dir", data, "--secure-port", fmt.Sprint(ports.Free(t)),
		"--audit-policy-file", policy, "--audit-log-path", auditLog)
	admin := filepath.Join(data, "admin.kubeconfig")
	waitForFile(t, admin, serverLogs)
	cfg, err := clientcmd.BuildConfigFromFlags("", admin)
	if err != nil {
		t.Fatal(err)
	}
	cfg.UserAgent = testUserAgent
	cs := kubernetes.NewForConfigOrDie(cfg)

	// The commands, each to its end; the controller manager until its identity lease
	// is written, then stopped.
	for _, args := range [][]string{
		{"upgrade-check", "--kubeconfig", admin, "--to-version", release.String()},
		{"migrations", "--kubeconfig", admin},
	} {
		out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput()
		if err != nil && strings.Contains(string(out), "connect") {
			t.Fatalf("concord %s did not reach the server: %v\n%s", args[0], err, out)
		}
	}
	cmLogs, stopCM := stoppable(t, bin, "controller-manager", "--kubeconfig", controllerManagerKubeconfig(t, bin, data), "--id", "cm-release")
	waitUntil(t, "the controller manager's identity lease", cmLogs, func() bool {
		_, err := cs.CoordinationV1().Leases("kube-system").Get(t.Context(), "cm-release", metav1.GetOptions{})
		return err == nil
	})
	stopCM()

	if lines := seriesLines(t, cfg); len(lines) != 0 {
		t.Errorf("requests counted out of skew with only Concord's commands as clients:\n%s", strings.Join(lines, "\n"))
	}
	wantUA := fmt.Sprintf("concord/v%d.%d.0 (", release.Major(), release.Minor())
	var agents map[string]int
	waitUntil(t, "the commands' requests in the audit log", serverLogs, func() bool {
		agents = adminUserAgents(t, auditLog)
		return len(agents) > 0
	})
	for ua, n := range agents {
		if !strings.HasPrefix(ua, wantUA) {
			t.Errorf("%d requests of the commands with User-Agent %q, want %q...", n, ua, wantUA)
		}
	}

	// Deliberately old clients are still counted: Concord's two minors below the
	// minimum compatibility version by its header, kubectl by its User-Agent.
	old := version.MajorMinor(release.Major(), release.Minor()-3)
	oldConcord := rest.CopyConfig(cfg)
	oldConcord.WrapTransport = compatibility.WrapTransport(old)
	if _, err := kubernetes.NewForConfigOrDie(oldConcord).CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	oldKubectl := rest.CopyConfig(cfg)
	oldKubectl.UserAgent = fmt.Sprintf("kubectl/v%s.2 (linux/amd64) kubernetes/0000000", old)
	if _, err := kubernetes.NewForConfigOrDie(oldKubectl).CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(seriesLines(t, cfg), "\n")
	for _, want := range []string{
		fmt.Sprintf(`%s{client="concord",client_version="%s"} 1`, skewSeries, old),
		fmt.Sprintf(`%s{client="kubectl",client_version="%s"} 1`, skewSeries, old),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the old clients: no %s in\n%s", want, got)
		}
	}
	kubectlRange := fmt.Sprintf(`client="kubectl" clientVersion="v%s.2" allowedFrom="%s" allowedTo="%s"`,
		old, version.MajorMinor(release.Major(), release.Minor()-1), version.MajorMinor(release.Major(), release.Minor()+1))
	waitUntil(t, "the log line of the old kubectl", serverLogs, func() bool {
		return strings.Contains(serverLogs.String(), kubectlRange)
	})
}

// seriesLines returns the samples of the skew counter on the server's /metrics.
func seriesLines(t *testing.T, cfg *rest.Config) []string {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, cfg.Host+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", testUserAgent)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %v", resp.StatusCode, err)
	}
	var out []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, skewSeries+"{") {
			out = append(out, line)
		}
	}
	return out
}

// adminUserAgents counts, by User-Agent, the audited requests of the administrator's
// kubeconfig other than this test's.
func adminUserAgents(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			UserAgent string                    `json:"userAgent"`
			User      struct{ Username string } `json:"user"`
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.User.Username == "concord-admin" && e.UserAgent != testUserAgent {
			out[e.UserAgent]++
		}
	}
	return out
}

// waitUntil polls cond for as long as the log of p, the process the awaited work is
// up to, moves (waitMoving), showing that log if cond never holds.
func waitUntil(t *testing.T, what string, p *running, cond func() bool) {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("logs:\n%s", p.Tail(200))
		}
	}()
	waitMoving(t, what, func() (bool, string) {
		if cond() {
			return true, ""
		}
		exitedEarly(t, p, what)
		return false, fmt.Sprint(p.Len())
	})
}

// Every command's flags are built in every process, and their help gives the releases
// and feature gates of the built-in API catalog, which a process that runs no server
// reads without decoding the catalog's API groups (catalog.DefaultSummary): the help
// says what the whole catalog says.
func TestHelpGivesTheBuiltInCatalog(t *testing.T) {
	t.Parallel()
	bin := buildConcord(t)
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	binary := cat.BinaryVersion()
	help := func(command string) string {
		out, err := exec.CommandContext(t.Context(), bin, command, "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("concord %s --help: %v\n%s", command, err, out)
		}
		// The help's lines are joined: a long one may be wrapped.
		return strings.Join(strings.Fields(string(out)), " ")
	}
	out := help("server")
	want := fmt.Sprintf("Options are: %s=%s..%s (default %s) with the built-in API catalog.", compatibility.Component, compatibility.Floor(cat), binary, binary)
	if !strings.Contains(out, want) {
		t.Errorf("concord server --help lacks %q:\n%s", want, out)
	}
	for name := range cat.FeatureGates() {
		if !strings.Contains(out, string(name)+",") {
			t.Errorf("concord server --help does not list the feature gate %s", name)
		}
	}
	want = fmt.Sprintf("With the built-in catalog: %s to %s.", cat.Releases()[0], binary)
	if out := help("upgrade-check"); !strings.Contains(out, want) {
		t.Errorf("concord upgrade-check --help lacks %q:\n%s", want, out)
	}
}
