package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

var concordBinary = flag.String("concord.binary", "",
	"run this concord binary instead of building cmd/concord (e.g. to keep its symbols for perf report)")

var unsafeNoFsync = flag.Bool("concord.etcd-unsafe-no-fsync", false,
	"start `concord etcd` with --unsafe-no-fsync (the default measures with fsync, as production runs)")

// errExited reports that a process under measurement ended on its own.
var errExited = errors.New("process exited")

// process is one Concord process under measurement: a `concord etcd` or a
// `concord server`, its log appended to a file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	started time.Time
	done    chan struct{} // closed once the process has been waited for
	err     error         // the exit status, valid once done is closed

	stopOnce sync.Once
	stopErr  error // what the first stop returned
}

// startProcess runs bin with args, appending its output to logPath.
func startProcess(name, logPath, bin string, args ...string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	p := &process{name: name, cmd: cmd, logPath: logPath, started: time.Now(), done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exited returns errExited, with the exit status and the end of the log, if the
// process has ended; nil if it still runs.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s: %w (%w); log ends with:\n%s", p.name, errExited, p.err, p.logTail())
	default:
		return nil
	}
}

// stop interrupts the process and waits for it, killing it after 30s. Later calls
// return what the first one did.
func (p *process) stop() error {
	p.stopOnce.Do(func() { p.stopErr = p.interrupt() })
	return p.stopErr
}

func (p *process) interrupt() error {
	if err := p.exited(); err != nil {
		return err
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("%s exited with %w; log ends with:\n%s", p.name, p.err, p.logTail())
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within 30s of SIGINT", p.name)
	}
}

// logTail returns the last few KiB of the process's log.
func (p *process) logTail() string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	const keep = 4 << 10
	if len(data) > keep {
		data = data[len(data)-keep:]
	}
	return string(data)
}

// waitForFile waits until path exists, failing early if p exits.
func waitForFile(ctx context.Context, p *process, path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if err := p.exited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not write %s within %v; log ends with:\n%s", p.name, path, timeout, p.logTail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// waitReady polls url+"/readyz" every few milliseconds and returns how long after
// the start of p it first answered 200.
func waitReady(ctx context.Context, p *process, url string, tlsConfig *tls.Config, timeout time.Duration) (time.Duration, error) {
	tr := &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
		if err != nil {
			return 0, err
		}
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(p.started), nil
			}
		}
		if err := p.exited(); err != nil {
			return 0, err
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s/readyz did not answer 200 within %v; log ends with:\n%s", url, timeout, p.logTail())
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
}

var clockTicks = sync.OnceValue(func() int64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 100 // what Linux reports on every common architecture
})

// cpuTime returns the user plus system CPU time that process pid (all its threads)
// has used so far, from /proc/<pid>/stat. Its resolution is one clock tick (10ms).
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(data, clockTicks())
}

// parseStatCPU extracts utime+stime from the text of /proc/<pid>/stat. The command
// name (field 2) is in parentheses and may hold spaces, so fields are counted after
// the last ')': field 3 (state) comes first, utime and stime are fields 14 and 15.
func parseStatCPU(stat []byte, ticksPerSecond int64) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat %q", stat)
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("malformed /proc stat %q: %d fields after the command", stat, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed /proc stat field %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / time.Duration(ticksPerSecond), nil
}

// machineBusy returns the CPU time all processors have spent busy (user, nice,
// system, irq, softirq and steal) since boot, from the first line of /proc/stat.
func machineBusy() (time.Duration, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	return parseMachineBusy(data, clockTicks())
}

func parseMachineBusy(stat []byte, ticksPerSecond int64) (time.Duration, error) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	fields := strings.Fields(string(line))
	// cpu user nice system idle iowait irq softirq steal ...
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, fmt.Errorf("malformed /proc/stat line %q", line)
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("malformed /proc/stat field %q: %w", fields[i], err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / time.Duration(ticksPerSecond), nil
}

// percentile returns the nearest-rank p-quantile (0 < p <= 1) of sorted, or 0 if it
// is empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// result is the outcome of one sub-benchmark run, as the ratio table needs it.
type result struct {
	opsPerSec   float64
	serverCPUOp time.Duration
	// othersCPU is the share of the machine (0..1) that processes other than the
	// server, etcd and the benchmark used during the run.
	othersCPU float64
}

// results keeps the last run of every sub-benchmark, keyed by operation and
// concurrency; the last run is the one with the final b.N.
type results struct {
	mu      sync.Mutex
	m       map[string]map[int]result
	startup map[string]time.Duration // median start-to-ready by sub-benchmark name
}

func (r *results) putStartup(name string, p50 time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.startup == nil {
		r.startup = map[string]time.Duration{}
	}
	r.startup[name] = p50
}

func (r *results) put(op string, c int, res result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]map[int]result{}
	}
	if r.m[op] == nil {
		r.m[op] = map[int]result{}
	}
	r.m[op][c] = res
}

func (r *results) get(op string, c int) (result, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.m[op][c]
	return res, ok
}

// ratio is one row of the table: the throughput of num over that of den, with the
// kube-apiserver 1.36 figure measured the same way where one is known.
type ratio struct {
	num, den  string
	reference map[int]float64
}

var ratios = []ratio{
	{"create", "etcd-txn", map[int]float64{1: 0.35, 8: 0.22, 32: 0.15}},
	{"create", "etcd-put", nil},
	{"get", "etcd-txn", map[int]float64{1: 0.57, 8: 0.40, 32: 0.28}},
	{"get", "etcd-get", nil},
	{"update", "etcd-put", nil},
	{"floor-create", "etcd-txn", nil},
	{"floor-get", "etcd-txn", nil},
	{"list", "etcd-range", nil},
	{"watch", "etcd-watch", nil},
}

// writeTable prints the throughput ratios and the server CPU per create for each
// concurrency that has figures; cells without figures show "-".
func (r *results) writeTable(w io.Writer, concurrencies []int) {
	fmt.Fprintf(w, "\nConcord / raw etcd throughput (kube-apiserver 1.36 reference in brackets)\n")
	fmt.Fprintf(w, "%-22s", "ratio")
	for _, c := range concurrencies {
		fmt.Fprintf(w, " %-14s", fmt.Sprintf("c=%d", c))
	}
	fmt.Fprintln(w)
	for _, rt := range ratios {
		fmt.Fprintf(w, "%-22s", rt.num+"/"+rt.den)
		for _, c := range concurrencies {
			cell := "-"
			n, okN := r.get(rt.num, c)
			d, okD := r.get(rt.den, c)
			if okN && okD && d.opsPerSec > 0 {
				cell = fmt.Sprintf("%.2f", n.opsPerSec/d.opsPerSec)
			}
			if ref, ok := rt.reference[c]; ok {
				cell += fmt.Sprintf(" [%.2f]", ref)
			}
			fmt.Fprintf(w, " %-14s", cell)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%-22s", "server CPU/create")
	for _, c := range concurrencies {
		cell := "-"
		if res, ok := r.get("create", c); ok {
			cell = fmt.Sprintf("%dµs", res.serverCPUOp.Microseconds())
		}
		fmt.Fprintf(w, " %-14s", cell+" [700-1100µs]")
	}
	fmt.Fprintln(w)
	r.mu.Lock()
	defer r.mu.Unlock()
	var others float64
	for _, byC := range r.m {
		for _, res := range byC {
			others = max(others, res.othersCPU)
		}
	}
	fmt.Fprintf(w, "other processes used at most %.0f%% of the machine during any measurement\n", 100*others)
	for _, name := range slices.Sorted(maps.Keys(r.startup)) {
		fmt.Fprintf(w, "start-to-ready, existing data dir, %s: p50 %dms [2000-3500ms]\n", name, r.startup[name].Milliseconds())
	}
}

// latencies collects one duration per operation, written by index from any number
// of goroutines, and summarises them.
type latencies []time.Duration

func (l latencies) quantiles() (p50, p99 time.Duration) {
	s := slices.Clone(l)
	slices.Sort(s)
	return percentile(s, 0.50), percentile(s, 0.99)
}

func (l latencies) max() time.Duration {
	if len(l) == 0 {
		return 0
	}
	return slices.Max(l)
}
