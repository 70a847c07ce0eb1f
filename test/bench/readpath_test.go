package bench

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/test/kubepeer"
)

var (
	readPathSizes = flag.String("readpath.sizes", "3000",
		"comma-separated numbers of ConfigMaps BenchmarkReadPath seeds, in a namespace of their own, on each server")
	readPathWatchers = flag.String("readpath.watchers", "32,256",
		"comma-separated numbers of watchers of BenchmarkReadPath's watch fan-out")
	readPathProtobuf = flag.Bool("readpath.protobuf", false,
		"BenchmarkReadPath's clients set ContentType "+protobufType+" (by default they leave it unset, as client-go's default is)")
	readPathJSON = flag.Bool("readpath.json", false,
		"BenchmarkReadPath's clients set ContentType application/json, so that every answer is JSON")
	readPathGets = flag.Int("readpath.gets", 5000,
		"gets of random seeded ConfigMaps BenchmarkReadPath times per server and size")
	readPathEtcdRate = flag.Float64("readpath.etcd-rate", 0,
		"changes per second the watch fan-out writes into etcd (0: as fast as 8 writers go); a fixed rate makes both servers carry the same load, where flat out each runs as fast as the machine's cores allow")
	readPathListTime = flag.Duration("readpath.list-time", 2*time.Second,
		"BenchmarkReadPath lists the namespace in full at least 3 times and until this long")
	readPathProfiles = flag.String("readpath.cpuprofile", "",
		"directory for CPU profiles of the benchmark process (the client) during each watch fan-out of BenchmarkReadPath")
	readPathServerProfile = flag.Duration("readpath.server-cpuprofile", 0,
		"with -readpath.cpuprofile, also write each server's CPU profile (/debug/pprof/profile) of this long from the start of each watch fan-out")
	kubeAPIServer = flag.String("kube.apiserver", "",
		"the kube-apiserver binary BenchmarkReadPath compares Concord with (default: test/kubepeer/build.sh's of -kube.release)")
	kubeRelease = flag.String("kube.release", "1.37.2",
		"the Kubernetes release whose kube-apiserver, built by test/kubepeer/build.sh, BenchmarkReadPath runs")
)

const (
	protobufType = "application/vnd.kubernetes.protobuf"
	// kubeEtcdPrefix keeps the kube-apiserver's keys apart from Concord's in the
	// etcd they share.
	kubeEtcdPrefix = "/kube-registry"
	// Concurrency of the seeding creates and of the gets; the watch fan-out's writers.
	readPathConcurrency, watchWriterConcurrency = 32, 8
	// watchCreates is the number of creations every watcher of a fan-out receives.
	watchCreates = 2000
	// etcdChangeCount is the number of changes written straight to etcd every watcher
	// of such a fan-out receives: more than creations, as they cost the servers
	// nothing to make, so that the servers' CPU is measured over seconds.
	etcdChangeCount = 10000
	// listPage is the limit of one page of the full lists.
	listPage = 500
)

// BenchmarkReadPath compares, in one run, with the same client code and the same
// etcd, Concord and a real kube-apiserver on the read path: for each of
// -readpath.sizes N it seeds N ConfigMaps of 1 KiB through each server (creates at
// c=32), then times gets at c=32 of random ones, full lists of the namespace in
// pages of 500, and watch fan-outs (W watchers receiving 2000 creations), and reads
// the CPU of the server and of the client and the server's resident memory. It ends
// with a table of each figure for both servers and their ratio. A fan-out's creations
// go through a second clientset, built the same way but on a connection of its own,
// so that the bytes, reads and writes counted are the watchers' alone; its "less the
// creates" figures subtract the CPU of the same 2000 creations made once with no
// watcher. Each fan-out is followed by one of 10,000 changes of seeded ConfigMaps
// written straight into etcd ("changes written to etcd"): no request but the
// watches reaches the server, so its CPU per event is the per-change path alone.
// A fan-out that delivers no event for a minute fails. Every phase runs
// once, whatever b.N; run it with -benchtime 1x:
//
//	go test ./test/bench -run '^$' -bench ReadPath -benchtime 1x -timeout 60m
//
// The kube-apiserver is -kube.apiserver, or test/kubepeer/build.sh's build of
// -kube.release; without either only Concord's column is measured.
func BenchmarkReadPath(b *testing.B) {
	rp, err := newReadPath(b)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range rp.sizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			for _, ph := range rp.phases() {
				b.Run(ph.name, func(b *testing.B) {
					for _, t := range rp.targets {
						b.Run(t.name, func(b *testing.B) { rp.bench(b, t, n, ph) })
					}
				})
			}
		})
	}
	rp.writeTable(os.Stdout)
}

// readPath holds what the sub-benchmarks of BenchmarkReadPath share.
type readPath struct {
	s        *suite
	sizes    []int
	watchers []int
	// content is the ContentType the clients set, "" for client-go's default.
	content string
	targets []*target
	// skipped says why the kube-apiserver column is missing, if it is.
	skipped string
	figures figureTable
}

// target is one server under measurement, started on first use.
type target struct {
	name     string
	binary   string // what runs it, for the table
	endpoint func() (*endpoint, error)
	data     map[int]*dataset // by size
}

func newReadPath(b *testing.B) (*readPath, error) {
	// GODEBUG=http2debug=1 (or 2) makes this process's HTTP/2 clients log every frame
	// they receive (read when the process starts): the servers must not inherit it.
	if gd := os.Getenv("GODEBUG"); strings.Contains(gd, "http2debug") {
		if err := os.Setenv("GODEBUG", withoutSetting(gd, "http2debug")); err != nil {
			return nil, err
		}
	}
	rp := &readPath{s: newSuite(b)}
	var err error
	if rp.sizes, err = positiveInts("-readpath.sizes", *readPathSizes); err != nil {
		return nil, err
	}
	if rp.watchers, err = positiveInts("-readpath.watchers", *readPathWatchers); err != nil {
		return nil, err
	}
	if *readPathGets <= 0 {
		return nil, fmt.Errorf("-readpath.gets: %d is not a positive number", *readPathGets)
	}
	switch {
	case *readPathJSON && *readPathProtobuf:
		return nil, errors.New("-readpath.json and -readpath.protobuf exclude each other")
	case *readPathJSON:
		rp.content = "application/json"
	case *readPathProtobuf:
		rp.content = protobufType
	}
	concord := sync.OnceValues(func() (*endpoint, error) {
		cl, err := rp.s.start()
		if err != nil {
			return nil, err
		}
		ep, err := newEndpoint("concord", cl, cl.server.pid(), filepath.Join(rp.s.dir, "server", "admin.kubeconfig"), rp.content)
		if ep != nil {
			ep.configMapKey = configMapKey
		}
		return ep, err
	})
	rp.addTarget("concord", concordBinaryName(), concord)
	bin, err := kubeBinary()
	switch {
	case errors.Is(err, kubepeer.ErrNotBuilt):
		rp.skipped = fmt.Sprintf("kube-apiserver column skipped: %v, or pass -kube.apiserver <path>", err)
		fmt.Println(rp.skipped)
	case err != nil:
		return nil, err
	default:
		rp.addTarget("kube", bin, sync.OnceValues(func() (*endpoint, error) { return rp.startKube(bin) }))
	}
	return rp, nil
}

func (rp *readPath) addTarget(name, binary string, ep func() (*endpoint, error)) {
	t := &target{name: name, binary: binary, endpoint: ep, data: map[int]*dataset{}}
	for _, n := range rp.sizes {
		t.data[n] = newDataset(rp.s.parent.Context(), n, ep)
	}
	rp.targets = append(rp.targets, t)
}

// concordBinaryName says which concord binary the suite runs.
func concordBinaryName() string {
	if *concordBinary != "" {
		return *concordBinary
	}
	return "cmd/concord built from this tree"
}

// kubeBinary returns -kube.apiserver, which must exist, or build.sh's build of
// -kube.release (kubepeer.ErrNotBuilt if there is none).
func kubeBinary() (string, error) {
	if *kubeAPIServer == "" {
		return kubepeer.Binary("kube-apiserver", *kubeRelease)
	}
	if _, err := os.Stat(*kubeAPIServer); err != nil {
		return "", fmt.Errorf("-kube.apiserver: %w", err)
	}
	return *kubeAPIServer, nil
}

// startKube runs the kube-apiserver on the suite's etcd under kubeEtcdPrefix, stopped
// when the benchmark ends (before the suite's processes, which started first).
func (rp *readPath) startKube(bin string) (*endpoint, error) {
	cl, err := rp.s.start()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(rp.s.dir, "kube")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "kube-apiserver.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p, err := kubepeer.Start(rp.s.parent.Context(), kubepeer.Options{Binary: bin, Dir: dir,
		EtcdServers: []string{cl.etcdURL}, EtcdPrefix: kubeEtcdPrefix, Log: logf})
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("%w; log: %s", err, logPath)
	}
	rp.s.parent.Cleanup(func() {
		p.Stop()
		logf.Close()
	})
	pid, err := childPID(bin)
	if err != nil {
		return nil, err
	}
	ep, err := newEndpoint("kube", cl, pid, p.Kubeconfig, rp.content)
	if ep != nil {
		// kube-apiserver's keys of the core group name no group.
		ep.configMapKey = func(ns, name string) string { return kubeEtcdPrefix + "/configmaps/" + ns + "/" + name }
	}
	return ep, err
}

// positiveInts parses a comma-separated list of distinct positive numbers.
func positiveInts(name, list string) ([]int, error) {
	var ns []int
	for f := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive number", name, f)
		}
		for _, m := range ns {
			if m == n {
				return nil, fmt.Errorf("%s: %d is given twice", name, n)
			}
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// withoutSetting returns a GODEBUG value without the setting called name.
func withoutSetting(godebug, name string) string {
	var kept []string
	for setting := range strings.SplitSeq(godebug, ",") {
		if k, _, _ := strings.Cut(setting, "="); strings.TrimSpace(k) != name && setting != "" {
			kept = append(kept, setting)
		}
	}
	return strings.Join(kept, ",")
}

// phase is one measurement of a dataset, and a sub-benchmark per target.
type phase struct {
	name string
	run  func(ds *dataset) ([]figure, error)
}

func (rp *readPath) phases() []phase {
	phases := []phase{
		{"create", (*dataset).seed},
		{"get", (*dataset).get},
		{"list", (*dataset).list},
	}
	for _, w := range rp.watchers {
		phases = append(phases, phase{fmt.Sprintf("watch-W=%d", w), func(ds *dataset) ([]figure, error) { return ds.watch(w) }},
			phase{fmt.Sprintf("watch-etcd-W=%d", w), func(ds *dataset) ([]figure, error) { return ds.watchEtcd(w) }})
	}
	return phases
}

// bench runs a phase once on the dataset, whatever b.N, and reports its figures on
// every call (the testing package calls again with a larger b.N a benchmark that
// took less than -benchtime).
func (rp *readPath) bench(b *testing.B, t *target, n int, ph phase) {
	ds := t.data[n]
	figs, err := ds.once(ph.name, func() ([]figure, error) { return ph.run(ds) })
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range figs {
		b.ReportMetric(f.value, f.unit)
	}
	rp.figures.put(n, t.name, figs)
}
