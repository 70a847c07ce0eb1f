package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
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

// Runner runs specs of an end-to-end binary against the cluster of a kubeconfig, each
// spec in its own process so that one spec's deadline ends only that spec.
type Runner struct {
	Binary     string
	Kubeconfig string
	Dir        string        // reports and logs, one pair per spec
	Workers    int           // specs run at once
	Timeout    time.Duration // per spec
}

// Run runs every spec and returns the results by spec.
func (r Runner) Run(ctx context.Context, specs []string) map[string]Result {
	results := make(map[string]Result, len(specs))
	var mu sync.Mutex
	work := make(chan int)
	var wg sync.WaitGroup
	for range max(r.Workers, 1) {
		wg.Go(func() {
			for i := range work {
				res := r.one(ctx, i, specs[i])
				mu.Lock()
				results[specs[i]] = res
				mu.Unlock()
			}
		})
	}
	for i := range specs {
		work <- i
	}
	close(work)
	wg.Wait()
	return results
}

var errNoReport = errors.New("the spec did not report")

// one runs one spec in a process of its own.
func (r Runner) one(ctx context.Context, i int, spec string) Result {
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	reportPath := filepath.Join(r.Dir, fmt.Sprintf("spec-%03d.json", i))
	logPath := filepath.Join(r.Dir, fmt.Sprintf("spec-%03d.log", i))
	logFile, err := os.Create(logPath)
	if err != nil {
		return Result{State: "failed", Failure: err.Error()}
	}
	defer func() { _ = logFile.Close() }()
	cmd := exec.CommandContext(ctx, r.Binary,
		"--kubeconfig="+r.Kubeconfig, "--e2e-verify-service-account=false", "--kubectl-path=kubectl",
		"--ginkgo.no-color", "--ginkgo.focus=(^|\\s)"+regexp.QuoteMeta(spec)+"$",
		"--ginkgo.json-report="+reportPath)
	cmd.Dir, cmd.Stdout, cmd.Stderr = r.Dir, logFile, logFile
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return Result{State: "timedout", RunTime: time.Since(start), Failure: fmt.Sprintf("no result within %v (log: %s)", r.Timeout, logPath)}
	}
	specs, err := readReport(reportPath)
	if err == nil {
		err = errNoReport
		for _, s := range specs {
			if s.LeafNodeType != "It" || s.name() != spec {
				continue
			}
			if s.State == "skipped" && s.Failure.Message == "" {
				continue // another spec of the same name, not focused
			}
			// A focused spec reported skipped has skipped itself (ginkgo.Skip).
			return Result{State: s.State, RunTime: s.RunTime, Failure: failure(s, logPath)}
		}
	}
	return Result{State: "failed", RunTime: time.Since(start), Failure: fmt.Sprintf("%v (exit: %v; log: %s)", err, runErr, logPath)}
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
