package safety

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/concordproject/concord/test/binary"
	"github.com/concordproject/concord/test/ports"
	"github.com/concordproject/concord/test/progress"
	"github.com/concordproject/concord/test/tcpgate"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Identity lease timings of every server: short, so that a server cut off from etcd
// loses its lease within a scenario.
const (
	leaseDuration = 5 * time.Second
	leaseRenew    = time.Second
)

// concordBinary returns the path of the concord binary the fleets run, this
// checkout's (see test/binary).
func concordBinary(t *testing.T) string {
	t.Helper()
	bin, err := binary.Concord()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// proc is one process of the fleet, its output in a log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// startProc runs bin with args, its output in dir/name.log.
// What of a process's log a failure prints: the test's directory, and the log in it,
// are gone once the test ends (CI keeps only the test's output).
const (
	excerptLines     = 40
	excerptLineBytes = 400
)

// logTail returns the last excerptLines lines of the log at path.
func logTail(path string) string { return logLines(path, nil, 0) }

// logExcerpt returns the last excerptLines lines of the log at path that start a
// process, say who leads an election, or mention one of names, each cut at
// excerptLineBytes.
func logExcerpt(path string, names []string) string {
	return logLines(path, func(l string) bool {
		return strings.Contains(l, `election="`) || strings.HasPrefix(l, "=== ") ||
			slices.ContainsFunc(names, func(n string) bool { return strings.Contains(l, n) })
	}, excerptLineBytes)
}

// logLines returns the last excerptLines lines of the log at path that keep accepts
// (nil: every line), each cut at width bytes (0: whole).
func logLines(path string, keep func(string) bool, width int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		if keep != nil && !keep(l) {
			continue
		}
		if width > 0 {
			l = l[:min(len(l), width)]
		}
		lines = append(lines, l)
	}
	return strings.Join(lines[max(0, len(lines)-excerptLines):], "\n")
}

func startProc(t *testing.T, dir, name, bin string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\n=== %s %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	// Whatever ends the test, a fatal wait included, ends the process too.
	t.Cleanup(func() {
		if !p.exited() {
			p.stop(t, false)
		}
	})
	return p
}

// stop ends p: SIGTERM and a wait (graceful), or SIGKILL (kill -9).
func (p *proc) stop(t *testing.T, graceful bool) {
	t.Helper()
	if !p.stopWithin(graceful, 60*time.Second) {
		t.Errorf("%s did not stop within 60s of SIGTERM; log %s", p.name, p.log)
	}
}

// stopWithin ends p: SIGTERM and a wait of up to limit (graceful), or SIGKILL (kill
// -9). It kills p at the limit, and says whether p stopped before it.
func (p *proc) stopWithin(graceful bool, limit time.Duration) bool {
	sig := syscall.SIGKILL
	if graceful {
		sig = syscall.SIGTERM
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
		return true
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.done
		return false
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// member is one etcd member.
type member struct {
	name, clientURL, peerURL, dataDir string
	proc                              *proc
}

// startEtcd starts an etcd cluster of n members and returns them with a client.
func startEtcd(t *testing.T, dir string, n int) ([]*member, *clientv3.Client) {
	t.Helper()
	var members []*member
	var initial []string
	for i := range n {
		m := &member{name: fmt.Sprintf("etcd-%d", i), dataDir: filepath.Join(dir, fmt.Sprintf("etcd-%d", i)),
			clientURL: fmt.Sprintf("http://127.0.0.1:%d", ports.Free(t)), peerURL: fmt.Sprintf("http://127.0.0.1:%d", ports.Free(t))}
		members = append(members, m)
		initial = append(initial, m.name+"="+m.peerURL)
	}
	for _, m := range members {
		m.start(t, dir, strings.Join(initial, ","), "new")
	}
	var endpoints []string
	for _, m := range members {
		endpoints = append(endpoints, m.clientURL)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	waitUntil(t, 60*time.Second, "etcd to answer", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := cli.Get(ctx, "health")
		return err == nil
	})
	return members, cli
}

func (m *member) start(t *testing.T, dir, initial, state string) {
	t.Helper()
	m.proc = startProc(t, dir, m.name, concordBinary(t), "etcd", "--name", m.name, "--data-dir", m.dataDir,
		"--listen-client-urls", m.clientURL, "--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", m.peerURL, "--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", initial, "--initial-cluster-state", state, "--unsafe-no-fsync",
		// A million widgets and their migration pass etcd's default quota of 2 GiB.
		"--quota-backend-bytes", fmt.Sprint(int64(16)<<30))
}

// server is one `concord server` of the fleet, or a kube-apiserver of a kube fleet,
// reaching etcd through its own proxy.
type server struct {
	index   int
	id      string
	port    int
	dataDir string
	// binary, emulation and minCompat are --binary-version, --emulation-version and
	// --min-compatibility-version ("" for the default).
	binary, emulation, minCompat string
	// kube is the release of the kube-apiserver that s is ("": s is Concord).
	kube  string
	proxy *tcpgate.Gate
	proc  *proc
	// routable is true from the moment the server is ready until it is stopped: a
	// load balancer's view, which the writers follow.
	routable       atomic.Bool
	cfg            *rest.Config
	clients        *kubernetes.Clientset
	dynamicClients *dynamic.DynamicClient
	// intruder is a client of a user bound to view only (intruderToken).
	intruder *kubernetes.Clientset
}

func (s *server) url() string { return fmt.Sprintf("https://127.0.0.1:%d", s.port) }

func (s *server) kubeconfig() string { return filepath.Join(s.dataDir, "admin.kubeconfig") }

// start starts s and waits until it is ready (its kubeconfig written, /readyz ok).
func (s *server) start(t *testing.T, dir string) {
	t.Helper()
	_ = os.Remove(s.kubeconfig())
	bin, args := concordBinary(t), s.args(dir)
	if s.kube != "" {
		bin, args = s.kubeCommand(t) // writes the kubeconfig
	}
	p := startProc(t, dir, s.id, bin, args...)
	liveMu.Lock()
	s.proc = p
	liveMu.Unlock()
	waitRunning(t, p, s.id+" to write its kubeconfig", func() bool {
		if p.exited() {
			t.Fatalf("%s exited: %v; log %s, ending:\n%s", s.id, p.err, p.log, logTail(p.log))
		}
		_, err := os.Stat(s.kubeconfig())
		return err == nil
	})
	if s.cfg == nil {
		cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig())
		if err != nil {
			t.Fatal(err)
		}
		cfg.QPS, cfg.Burst = -1, 0
		cfg.Timeout = 15 * time.Second
		cfg.WarningHandler = rest.NoWarnings{}
		s.cfg = cfg
		s.clients = kubernetes.NewForConfigOrDie(cfg)
		s.dynamicClients = dynamic.NewForConfigOrDie(cfg)
		intruder := rest.AnonymousClientConfig(cfg)
		intruder.BearerToken = intruderToken
		s.intruder = kubernetes.NewForConfigOrDie(intruder)
	}
	waitRunning(t, p, s.id+" to be ready", func() bool {
		if p.exited() {
			t.Fatalf("%s exited: %v; log %s, ending:\n%s", s.id, p.err, p.log, logTail(p.log))
		}
		return s.ready(t) == nil
	})
	s.routable.Store(true)
}

// args are the arguments of `concord server` for s as it is now.
func (s *server) args(dir string) []string {
	args := []string{"server", "--etcd-servers", s.proxy.URL(), "--data-dir", s.dataDir,
		"--secure-port", fmt.Sprint(s.port), "--server-id", s.id,
		"--identity-lease-duration", leaseDuration.String(), "--identity-lease-renew-interval", leaseRenew.String(), "-v", "4",
		"--token-auth-file", filepath.Join(dir, tokensFile)}
	if s.binary != "" {
		args = append(args, "--binary-version", s.binary)
	}
	if s.emulation != "" {
		args = append(args, "--emulation-version", s.emulation)
	}
	if s.minCompat != "" {
		args = append(args, "--min-compatibility-version", s.minCompat)
	}
	if gates := fieldGates(s.binary, s.emulation); gates != "" {
		args = append(args, "--feature-gates", gates)
	}
	return args
}

// fieldGates are the feature gates a Concord server of binary and emulation version
// ("" for the defaults) is started with: those of the PodTemplate fields the field
// writer sets that are alpha, and so off by default, from the release each came in, so
// that the server stores them. A server emulating an older release than its binary's
// may enable no alpha feature: it drops them, as kube-apiserver does.
func fieldGates(binary, emulation string) string {
	if emulation != "" && emulation != binary {
		return ""
	}
	var gates []string
	for _, g := range []struct{ name, since string }{
		{"ContainerStopSignals", "1.33"}, {"PodCertificateRequest", "1.34"}, {"GenericWorkload", "1.35"},
	} {
		if binary == "" || !version.MustParse(binary).LessThan(version.MustParse(g.since)) {
			gates = append(gates, g.name+"=true")
		}
	}
	return strings.Join(gates, ",")
}

// ready is nil when /readyz answers ok.
func (s *server) ready(t *testing.T) error {
	hc, err := rest.HTTPClientFor(s.cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url()+"/readyz?verbose", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s", errNotReady, resp.Status)
	}
	return nil
}

var errNotReady = errors.New("/readyz is not ok")

func (s *server) live() bool { return s.proc != nil && !s.proc.exited() }

// waitUntil polls cond every 100ms until it holds or timeout passes.
// waitRunning waits for cond while p works towards it: a server's start, on a loaded
// machine or with a million objects to load, takes as long as it takes while the
// process uses CPU. It gives up once p has used none for startStall, or after
// startBound.
func waitRunning(t *testing.T, p *proc, what string, cond func() bool) {
	t.Helper()
	progress.Wait(t, what, progress.Limits{Stall: startStall, Bound: startBound}, func() (bool, string, error) {
		if cond() {
			return true, "", nil
		}
		return false, fmt.Sprintf("%s's CPU ticks %d", p.name, binary.CPUTicks(p.cmd.Process.Pid)), nil
	})
}

// startStall and startBound are waitRunning's limits.
const (
	startStall = 30 * time.Second
	startBound = 10 * time.Minute
)

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
