package bench

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// figure is one measured value of a phase on one server.
type figure struct {
	label string // its row in the table, e.g. "get c=32 op/s"
	unit  string // its benchmark metric, e.g. "op/s"
	value float64
}

// rateFigures are the figures of n operations (ops, items or events) done in elapsed
// while the processes used c: the rate and the CPU per operation.
func rateFigures(label, what string, n int, elapsed time.Duration, c cpu) []figure {
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }
	others := c.others().Seconds() / (elapsed.Seconds() * float64(runtime.NumCPU()))
	return []figure{
		{label + " " + what + "/s", what + "/s", float64(n) / elapsed.Seconds()},
		{label + " server CPU µs/" + what, "server-cpu-µs/" + what, per(c.server)},
		{label + " etcd CPU µs/" + what, "etcd-cpu-µs/" + what, per(c.etcd)},
		{label + " client CPU µs/" + what, "client-cpu-µs/" + what, per(c.self)},
		{label + " others CPU %", "others-cpu-%", 100 * others},
	}
}

func latencyFigures(label string, lat latencies) []figure {
	p50, p99 := lat.quantiles()
	return []figure{
		{label + " p50 µs", "p50-µs", float64(p50.Microseconds())},
		{label + " p99 µs", "p99-µs", float64(p99.Microseconds())},
	}
}

// memoryFigures are the server's resident memory rss and its growth from before, in
// KiB, per seeded object.
func memoryFigures(when string, rss, before int64, objects int) []figure {
	return []figure{
		{"server RSS " + when + " MiB", "rss-MiB", float64(rss) / 1024},
		{"server RSS growth " + when + " KiB/object", "rss-KiB/object", float64(rss-before) / float64(objects)},
	}
}

// connFigures are what the client read and wrote on its connections, per event, and
// how many connections it has dialed.
func connFigures(label string, c connCounts, conns int64, events int) []figure {
	per := func(v int64) float64 { return float64(v) / float64(events) }
	return []figure{
		{label + " client bytes read/event", "read-B/event", per(c.readBytes)},
		{label + " client reads/event", "reads/event", per(c.reads)},
		{label + " client writes/event", "writes/event", per(c.writes)},
		{label + " client connections", "conns", float64(conns)},
	}
}

// figureTable collects the figures of every server, by size and row, rows in the
// order they were first put.
type figureTable struct {
	mu   sync.Mutex
	rows []figureRow
}

type figureRow struct {
	n      int
	label  string
	values map[string]float64 // by server
}

func (t *figureTable) put(n int, server string, figs []figure) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, f := range figs {
		i := slices.IndexFunc(t.rows, func(r figureRow) bool { return r.n == n && r.label == f.label })
		if i < 0 {
			t.rows = append(t.rows, figureRow{n: n, label: f.label, values: map[string]float64{}})
			i = len(t.rows) - 1
		}
		t.rows[i].values[server] = f.value
	}
}

// write prints, for each size, every row with the figures of Concord and of the
// kube-apiserver and their ratio; a missing figure is "-".
func (t *figureTable) write(w io.Writer, sizes []int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range sizes {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "N=%d\tconcord\tkube\tconcord/kube\t\n", n)
		for _, r := range t.rows {
			if r.n != n {
				continue
			}
			c, okC := r.values["concord"]
			k, okK := r.values["kube"]
			ratio := "-"
			if okC && okK && k != 0 && !strings.HasSuffix(r.label, "others CPU %") {
				ratio = fmt.Sprintf("%.2f", c/k)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", r.label, formatFigure(c, okC), formatFigure(k, okK), ratio)
		}
		tw.Flush()
	}
}

// formatFigure prints v with three or more significant digits.
func formatFigure(v float64, ok bool) string {
	switch {
	case !ok:
		return "-"
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// writeTable prints how the clients were made, what the servers answered them and
// the table of figures.
func (rp *readPath) writeTable(w io.Writer) {
	content := rp.content
	if content == "" {
		content = "unset (client-go's default: typed clients of built-in kinds ask for protobuf, then JSON)"
	}
	fmt.Fprintf(w, "\nBenchmarkReadPath: %s typed clientsets, QPS -1, ContentType %s; ConfigMaps of %d bytes as Concord stores them\n",
		clientGoVersion(), content, objectSize)
	for _, t := range rp.targets {
		ep, err := t.endpoint()
		if err != nil {
			fmt.Fprintf(w, "%s (%s): %v\n", t.name, t.binary, err)
			continue
		}
		fmt.Fprintf(w, "%s (%s) answered %s\n", t.name, t.binary, ep.answers.String())
	}
	if rp.skipped != "" {
		fmt.Fprintln(w, rp.skipped)
	}
	rp.figures.write(w, rp.sizes)
}

// clientGoVersion names the client-go module the benchmark is built with, from the
// binary's build information or else from the module's go.mod (test binaries have
// no dependencies in their build information).
func clientGoVersion() string {
	const module = "k8s.io/client-go"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == module {
				return module + " " + m.Version
			}
		}
	}
	if gomod, err := os.ReadFile(filepath.Join("..", "..", "go.mod")); err == nil {
		for line := range strings.Lines(string(gomod)) {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == module {
				return module + " " + f[1]
			}
		}
	}
	return module
}

// startProfile starts a CPU profile of this process into name.pprof in the
// -readpath.cpuprofile directory, if one is given, and returns what stops it.
func startProfile(name string) (stop func() error, err error) {
	if *readPathProfiles == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(*readPathProfiles, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(*readPathProfiles, name+".pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("CPU profile %s: %w", name, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// vmRSS returns the resident memory of process pid, in KiB.
func vmRSS(pid int) (int64, error) {
	rss, _, err := residentMemory(pid)
	return rss, err
}

// residentMemory returns a process's resident memory in KiB, all of it (VmRSS) and
// its anonymous part (RssAnon: the heap, stacks and runtime's, not the executable's
// pages, which the kernel may drop and read again).
func residentMemory(pid int) (rss, anon int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	if rss, err = statusField(data, "VmRSS"); err != nil {
		return 0, 0, err
	}
	anon, err = statusField(data, "RssAnon")
	return rss, anon, err
}

// statusField returns the number of field key ("VmRSS", "PPid") of the text of a
// /proc/<pid>/status, whose lines read "Key:\t<number>[ kB]".
func statusField(status []byte, key string) (int64, error) {
	for line := range bytes.Lines(status) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || string(k) != key {
			continue
		}
		fields := strings.Fields(string(v))
		if len(fields) == 0 {
			break
		}
		return strconv.ParseInt(fields[0], 10, 64)
	}
	return 0, fmt.Errorf("no %s in /proc status", key)
}

// childPID returns the process id of the child of this process that runs bin.
func childPID(bin string) (int, error) {
	want, err := filepath.Abs(bin)
	if err == nil {
		want, err = filepath.EvalSymlinks(want)
	}
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || exe != want {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		if ppid, err := statusField(status, "PPid"); err == nil && int(ppid) == os.Getpid() {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no child process of this one runs %s", want)
}
