package conformance

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/concordproject/concord/etcd"
	"github.com/concordproject/concord/test/binary"
	"github.com/concordproject/concord/test/kubepeer"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	full        = flag.Bool("full", false, "run every sig-api-machinery spec of the release (less Slow, Serial and Disruptive ones), not only the short subset")
	peer        = flag.Bool("peer", false, "also run the specs against a kube-apiserver of the release (built by test/kubepeer/build.sh)")
	release     = flag.String("release", "1.37.2", "the Kubernetes release whose end-to-end specs run; Concord emulates its minor version")
	workers     = flag.Int("workers", 4, "processes of specs run at once")
	batch       = flag.Int("batch", 8, "specs one process runs (those it leaves without a result run again, each alone)")
	timeout     = flag.Duration("spec-timeout", 3*time.Minute, "how long one process of specs may take")
	out         = flag.String("out", "", "directory to keep the reports, logs and the table in (default: the test's temporary directory)")
	concordFlag = flag.String("concord", "", "a concord binary to run instead of building one from this tree (e.g. an older commit's, to compare)")
	focus       = flag.String("focus", "", "run only the specs of the release whose names match this regular expression (e.g. 'health handlers|Aggregator'), held to expected.yaml")
)

// TestConformance runs Kubernetes' sig-api-machinery end-to-end specs against a
// Concord server: by default the short subset of expected.yaml, with -full all of them
// (and, with -peer, against a kube-apiserver of the same release too), and checks the
// results against expected.yaml. test/conformance/run.sh runs it the full way.
func TestConformance(t *testing.T) {
	exp, err := LoadExpectations("expected.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e2e, err := kubepeer.Binary("e2e-apimachinery", *release)
	if errors.Is(err, kubepeer.ErrNotBuilt) && os.Getenv("CONCORD_CONFORMANCE") != "required" {
		t.Skipf("%v; CI builds it", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := *out
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	all, err := List(t.Context(), e2e, dir)
	if err != nil {
		t.Fatal(err)
	}
	specs := all
	switch {
	case *focus != "":
		re, err := regexp.Compile(*focus)
		if err != nil {
			t.Fatalf("-focus: %v", err)
		}
		specs = slices.DeleteFunc(slices.Clone(all), func(s string) bool { return !re.MatchString(s) })
		if len(specs) == 0 {
			t.Fatalf("-focus %q matches no spec of release %s", *focus, *release)
		}
	case !*full:
		specs = exp.Short(all)
		if len(specs) != exp.ShortCount() {
			t.Fatalf("expected.yaml's short subset has %d specs, release %s has %d of them", exp.ShortCount(), *release, len(specs))
		}
	}
	concord := Runner{Binary: e2e, Kubeconfig: startConcord(t, filepath.Join(dir, "concord")), Dir: mkdir(t, dir, "concord-specs"), Workers: *workers, BatchSize: *batch, Timeout: *timeout}
	var peerResults map[string]Result
	if *peer {
		p := startPeer(t, filepath.Join(dir, "peer"))
		peerResults = Runner{Binary: e2e, Kubeconfig: p, Dir: mkdir(t, dir, "peer-specs"), Workers: *workers, BatchSize: *batch, Timeout: *timeout}.Run(t.Context(), specs)
	}
	results := concord.Run(t.Context(), specs)
	table := tableOf(specs, results, peerResults, exp)
	t.Logf("release %s, %d specs:\n%s", *release, len(specs), table)
	if err := os.WriteFile(filepath.Join(dir, "results-"+*release+".txt"), []byte(table), 0o644); err != nil {
		t.Error(err)
	}
	check(t, specs, results, peerResults, exp)
}

// check holds the results to the expectations.
func check(t *testing.T, specs []string, results, peerResults map[string]Result, exp Expectations) {
	t.Helper()
	for _, s := range specs {
		e, listed := exp.Of(s)
		r := results[s]
		switch {
		case *full && !listed:
			t.Errorf("not in expected.yaml (Concord: %s): %s", r.State, s)
		case e.Pass && !r.Passed():
			t.Errorf("expected to pass, %s: %s\n\t%s", r.State, s, r.Failure)
		case listed && !e.Pass && r.Passed():
			t.Logf("passes, but expected.yaml gives a reason not to (%s): %s", e.Reason, s)
		}
		if p, ran := peerResults[s]; ran && p.Passed() && listed && (e.Reason == "controller" || e.Reason == "feature") {
			t.Errorf("the peer passes it, so expected.yaml's reason (%s) is not why Concord does not: %s", e.Reason, s)
		}
	}
}

// tableOf prints a line per spec (Concord's result, the peer's, the expectation) and
// the counts.
func tableOf(specs []string, results, peerResults map[string]Result, exp Expectations) string {
	var b bytes.Buffer
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "CONCORD\tPEER\tEXPECTED\tSPEC")
	var concord, kube, both int
	for _, s := range specs {
		c, p := results[s], peerResults[s]
		peerState := "-"
		if peerResults != nil {
			peerState = p.State
		}
		want := "pass"
		if e, _ := exp.Of(s); !e.Pass {
			want = e.Reason
			if want == "" {
				want = "(unlisted)"
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.State, peerState, want, s)
		concord += b2i(c.Passed())
		kube += b2i(p.Passed())
		both += b2i(c.Passed() && p.Passed())
	}
	_ = w.Flush()
	fmt.Fprintf(&b, "passed: Concord %d, peer %d, both %d, of %d\n", concord, kube, both, len(specs))
	return b.String()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func mkdir(t *testing.T, parts ...string) string {
	t.Helper()
	d := filepath.Join(parts...)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// emulation is the minor release Concord emulates for the specs of -release.
func emulation(t *testing.T) string {
	v, err := version.ParseGeneric(*release)
	if err != nil {
		t.Fatalf("-release %q: %v", *release, err)
	}
	return fmt.Sprintf("%d.%d", v.Major(), v.Minor())
}

// startConcord builds the concord binary and runs `concord server` on its embedded
// etcd at the emulation version of -release; it returns the admin kubeconfig.
func startConcord(t *testing.T, dir string) string {
	t.Helper()
	bin := *concordFlag
	if bin == "" {
		var err error
		if bin, err = binary.Concord(); err != nil {
			t.Fatal(err)
		}
	}
	logs, err := os.Create(mkdir(t, dir) + ".log")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "server", "--data-dir="+dir, "--secure-port=0", "--emulation-version="+emulation(t))
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
		_ = logs.Close()
	})
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	waitReady(t, kubeconfig, done, logs.Name())
	return kubeconfig
}

// waitReady waits until the kubeconfig exists and its server's /readyz answers ok.
func waitReady(t *testing.T, kubeconfig string, exited <-chan error, logs string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-exited:
			return false, fmt.Errorf("exited: %w", err)
		default:
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return false, nil //nolint:nilerr // not written yet
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return false, err
		}
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
	if err != nil {
		t.Fatalf("concord server not ready: %v (logs: %s)", err, logs)
	}
}

// startPeer runs a kube-apiserver of -release on an etcd of its own and returns its
// admin kubeconfig.
func startPeer(t *testing.T, dir string) string {
	t.Helper()
	bin, err := kubepeer.Binary("kube-apiserver", *release)
	if err != nil {
		t.Fatal(err)
	}
	m, err := etcd.StartLoopback(t.Context(), filepath.Join(t.TempDir(), "etcd"), etcd.WithUnsafeNoFsync())
	if err != nil {
		t.Fatalf("starting the peer's etcd: %v", err)
	}
	t.Cleanup(m.Close)
	logs, err := os.Create(mkdir(t, dir) + ".log")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logs.Close() })
	p, err := kubepeer.Start(t.Context(), kubepeer.Options{Binary: bin, Dir: dir, EtcdServers: m.Endpoints(), Log: logs})
	if err != nil {
		t.Fatalf("%v (logs: %s)", err, logs.Name())
	}
	t.Cleanup(p.Stop)
	return p.Kubeconfig
}

// TestResultOf checks how a batch's report is read: an interrupted spec, and a spec
// of the same name skipped unfocused, have no result (the spec runs again alone); a
// spec that skipped itself has one.
func TestResultOf(t *testing.T) {
	spec := func(leaf, state, msg string) specReport {
		s := specReport{ContainerHierarchyTexts: []string{"[sig-api-machinery] c"}, LeafNodeText: leaf, LeafNodeType: "It", State: state}
		s.Failure.Message = msg
		return s
	}
	reports := []specReport{
		spec("ran", "passed", ""),
		spec("cut", "interrupted", "Interrupted by User"),
		spec("later", "skipped", ""),
		spec("skips", "skipped", "needs a node"),
		spec("twice", "skipped", ""),
		spec("twice", "failed", "boom"),
	}
	for name, want := range map[string]string{"ran": "passed", "cut": "", "later": "", "skips": "skipped", "twice": "failed", "absent": ""} {
		res, ok := resultOf(reports, "[sig-api-machinery] c "+name, "log")
		if got := map[bool]string{true: res.State}[ok]; got != want {
			t.Errorf("%s: result %q (found %v), want %q", name, res.State, ok, want)
		}
	}
}
