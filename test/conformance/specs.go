package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// excluded matches the specs a run leaves out: those that take long, must run alone,
// or disrupt the cluster, as Kubernetes' own parallel conformance runs leave them out.
var excluded = regexp.MustCompile(`\[(Slow|Serial|Disruptive)\]`)

// report is the part of a Ginkgo JSON report the runner reads.
type report []struct {
	SpecReports []specReport
}

type specReport struct {
	ContainerHierarchyTexts []string
	LeafNodeText            string
	LeafNodeType            string
	State                   string
	RunTime                 time.Duration
	Failure                 struct {
		Message  string
		Location struct {
			FileName   string
			LineNumber int
		}
	}
}

func (s specReport) name() string {
	return strings.Join(append(append([]string(nil), s.ContainerHierarchyTexts...), s.LeafNodeText), " ")
}

// List returns the sig-api-machinery specs of an end-to-end binary, sorted, less the
// excluded ones.
func List(ctx context.Context, binary, dir string) ([]string, error) {
	out := filepath.Join(dir, "dry-run.json")
	cmd := exec.CommandContext(ctx, binary, "--ginkgo.dry-run", "--ginkgo.no-color",
		`--ginkgo.focus=\[sig-api-machinery\]`, "--ginkgo.json-report="+out)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("listing the specs of %s: %w\n%s", binary, err, tail(b))
	}
	reports, err := readReport(out)
	if err != nil {
		return nil, err
	}
	var specs []string
	for _, r := range reports {
		if r.LeafNodeType == "It" && r.State == "passed" && !excluded.MatchString(r.name()) {
			specs = append(specs, r.name())
		}
	}
	sort.Strings(specs)
	return specs, nil
}

func readReport(path string) ([]specReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("reading the report %s: %w", path, err)
	}
	var specs []specReport
	for _, suite := range r {
		specs = append(specs, suite.SpecReports...)
	}
	return specs, nil
}

// Result is how one spec ended on one server.
type Result struct {
	State   string // passed, failed, timedout (by the runner's deadline), or Ginkgo's other states
	RunTime time.Duration
	Failure string // the failure's message and location, or what the runner saw
}

// Passed says whether the spec passed.
func (r Result) Passed() bool { return r.State == "passed" }

// Runner runs specs of an end-to-end binary against the cluster of a kubeconfig. The
// specs run in batches of up to BatchSize, one process each, several at once (the way
// Kubernetes' parallel runs share a process among many specs, and one process start
// of the binary costs a third of a second of CPU). A batch's deadline is Timeout, as
// one spec's: every spec its process left without a result (the deadline passed, or
// the process died) runs again in a process of its own, so that only a spec that
// hangs by itself ends by its deadline.
type Runner struct {
	Binary     string
	Kubeconfig string
	Dir        string        // reports and logs, one pair per process
	Workers    int           // processes at once
	BatchSize  int           // specs per process (at least 1)
	Timeout    time.Duration // per process
}

// Run runs every spec and returns the results by spec.
func (r Runner) Run(ctx context.Context, specs []string) map[string]Result {
	size := max(r.BatchSize, 1)
	var batches [][]string
	for b := range slices.Chunk(specs, size) {
		batches = append(batches, b)
	}
	results := r.runAll(ctx, batches)
	var again [][]string
	for _, s := range specs {
		if _, ok := results[s]; !ok && size > 1 {
			again = append(again, []string{s})
		}
	}
	maps.Copy(results, r.runAll(ctx, again))
	for _, s := range specs {
		if _, ok := results[s]; !ok {
			results[s] = Result{State: "failed", Failure: "no result (see the logs in " + r.Dir + ")"}
		}
	}
	return results
}

// runAll runs the batches, Workers at once, and returns the results they reported.
func (r Runner) runAll(ctx context.Context, batches [][]string) map[string]Result {
	results := map[string]Result{}
	var mu sync.Mutex
	work := make(chan []string)
	var wg sync.WaitGroup
	for range max(r.Workers, 1) {
		wg.Go(func() {
			for b := range work {
				res := r.batch(ctx, b)
				mu.Lock()
				maps.Copy(results, res)
				mu.Unlock()
			}
		})
	}
	for _, b := range batches {
		work <- b
	}
	close(work)
	wg.Wait()
	return results
}

// seq numbers the processes of every Runner, for their report and log names.
var seq atomic.Int64

// batch runs specs in one process and returns the result of each spec it reports on.
// A process that ends without reporting on a lone spec is that spec's failure.
func (r Runner) batch(ctx context.Context, specs []string) map[string]Result {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	n := seq.Add(1)
	reportPath := filepath.Join(r.Dir, fmt.Sprintf("run-%03d.json", n))
	logPath := filepath.Join(r.Dir, fmt.Sprintf("run-%03d.log", n))
	lone := func(res Result) map[string]Result {
		if len(specs) > 1 {
			return nil // each runs again alone
		}
		return map[string]Result{specs[0]: res}
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return lone(Result{State: "failed", Failure: err.Error()})
	}
	defer func() { _ = logFile.Close() }()
	args := []string{"--kubeconfig=" + r.Kubeconfig, "--e2e-verify-service-account=false", "--kubectl-path=kubectl",
		"--ginkgo.no-color", "--ginkgo.json-report=" + reportPath}
	for _, s := range specs {
		args = append(args, "--ginkgo.focus=(^|\\s)"+regexp.QuoteMeta(s)+"$")
	}
	cmd := exec.CommandContext(ctx, r.Binary, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = r.Dir, logFile, logFile
	// Interrupted, Ginkgo still writes its report: the specs it finished keep their
	// results.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	reports, err := readReport(reportPath)
	out := map[string]Result{}
	for _, s := range specs {
		if res, ok := resultOf(reports, s, logPath); ok {
			out[s] = res
		}
	}
	switch {
	case len(out) > 0 || len(specs) > 1:
		return out
	case ctx.Err() != nil:
		return lone(Result{State: "timedout", RunTime: time.Since(start), Failure: fmt.Sprintf("no result within %v (log: %s)", r.Timeout, logPath)})
	case err == nil:
		err = errNoReport
	}
	return lone(Result{State: "failed", RunTime: time.Since(start), Failure: fmt.Sprintf("%v (exit: %v; log: %s)", err, runErr, logPath)})
}

var errNoReport = errors.New("the spec did not report")

// resultOf finds the result of spec in a report. Another spec of the same name that
// was not focused reports skipped, with no message, and is passed over; an
// interrupted spec has no result.
func resultOf(reports []specReport, spec, logPath string) (Result, bool) {
	for _, s := range reports {
		if s.LeafNodeType != "It" || s.name() != spec {
			continue
		}
		switch {
		case s.State == "skipped" && s.Failure.Message == "":
			continue
		case s.State == "interrupted":
			return Result{}, false
		}
		// A focused spec reported skipped has skipped itself (ginkgo.Skip).
		return Result{State: s.State, RunTime: s.RunTime, Failure: failure(s, logPath)}, true
	}
	return Result{}, false
}

func failure(s specReport, logPath string) string {
	if s.State == "passed" {
		return ""
	}
	msg := strings.TrimSpace(s.Failure.Message)
	if i := strings.IndexByte(msg, '\n'); i >= 0 && i < len(msg)-1 {
		msg = msg[:i] + " …"
	}
	return fmt.Sprintf("%s [%s:%d] (log: %s)", msg, filepath.Base(s.Failure.Location.FileName), s.Failure.Location.LineNumber, logPath)
}

func tail(b []byte) string {
	const n = 2000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
