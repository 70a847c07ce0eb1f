package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// endpoint is a running server and the clients BenchmarkReadPath uses on it.
type endpoint struct {
	name string   // "concord" or "kube"
	cl   *cluster // the suite's: its etcd, and the payload of a 1 KiB ConfigMap
	pid  int      // the server's process
	// clientset does the seeding, gets, lists and watches; writer makes the creations
	// a watch fan-out delivers, on a connection of its own, so that conns counts
	// what the watchers read and nothing else during a fan-out. Both are built the
	// same way from the server's admin kubeconfig.
	clientset, writer *kubernetes.Clientset
	// configMapKey returns the etcd key of a ConfigMap of this server.
	configMapKey       func(ns, name string) string
	conns, writerConns connStats
	answers            answers
}

func newEndpoint(name string, cl *cluster, pid int, kubeconfig, contentType string) (*endpoint, error) {
	ep := &endpoint{name: name, cl: cl, pid: pid}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = -1 // no client-side rate limit
	cfg.ContentType = contentType
	writerCfg := rest.CopyConfig(cfg)
	cfg.Dial, writerCfg.Dial = ep.conns.dial, ep.writerConns.dial
	cfg.WrapTransport = ep.answers.wrap
	if ep.clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if ep.writer, err = kubernetes.NewForConfig(writerCfg); err != nil {
		return nil, err
	}
	return ep, nil
}

// profileServer starts a CPU profile of the server of -readpath.server-cpuprofile's
// length into name-server.pprof in the -readpath.cpuprofile directory, if both are
// given, and returns what waits for it and writes it.
func (ep *endpoint) profileServer(ctx context.Context, name string) (wait func() error) {
	if *readPathProfiles == "" || *readPathServerProfile <= 0 {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() {
		raw, err := ep.clientset.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", strconv.Itoa(int(readPathServerProfile.Seconds()))).DoRaw(ctx)
		if err == nil {
			err = os.WriteFile(filepath.Join(*readPathProfiles, name+"-server.pprof"), raw, 0o644)
		}
		done <- err
	}()
	return func() error { return <-done }
}

// measure runs f and returns the CPU that the server, etcd, this process and the
// machine used meanwhile, and how long f took.
func (ep *endpoint) measure(f func() error) (cpu, time.Duration, error) {
	before, err := ep.cl.cpuOf(ep.pid)
	if err != nil {
		return cpu{}, 0, err
	}
	start := time.Now()
	if err := f(); err != nil {
		return cpu{}, 0, errors.Join(err, ep.exited())
	}
	elapsed := time.Since(start)
	after, err := ep.cl.cpuOf(ep.pid)
	return after.minus(before), elapsed, err
}

// exited returns an error if the server or etcd has ended.
func (ep *endpoint) exited() error {
	err := ep.cl.etcd.exited()
	if ep.name == "concord" {
		return errors.Join(err, ep.cl.server.exited())
	}
	if _, statErr := os.Stat(fmt.Sprintf("/proc/%d", ep.pid)); statErr != nil {
		err = errors.Join(err, fmt.Errorf("the kube-apiserver (pid %d) has exited", ep.pid))
	}
	return err
}

// dataset is the namespace of n seeded ConfigMaps on one server, and the phases
// measured on it, each run once.
type dataset struct {
	ctx      context.Context
	n        int
	ns       string
	endpoint func() (*endpoint, error)
	// rssBefore is the server's resident memory, in KiB, before the seeding.
	rssBefore int64
	// heapBefore is the server's live heap, in bytes, before the seeding.
	heapBefore int64
	// seq numbers the creations of the watch fan-outs.
	seq atomic.Int64
	// writes returns the CPU that watchCreates creations through the writer at c=8
	// use with no watcher, measured once.
	writes func() (writesAlone, error)
	mu     sync.Mutex
	memo   map[string]func() ([]figure, error)
}

func newDataset(ctx context.Context, n int, ep func() (*endpoint, error)) *dataset {
	ds := &dataset{ctx: ctx, n: n, ns: fmt.Sprintf("readpath-%d", n), endpoint: ep, memo: map[string]func() ([]figure, error){}}
	ds.writes = sync.OnceValues(ds.measureWrites)
	return ds
}

// once runs the phase called name the first time it is asked for and returns what
// that run returned every time.
func (ds *dataset) once(name string, run func() ([]figure, error)) ([]figure, error) {
	ds.mu.Lock()
	f, ok := ds.memo[name]
	if !ok {
		f = sync.OnceValues(run)
		ds.memo[name] = f
	}
	ds.mu.Unlock()
	return f()
}

// seeded seeds the dataset if that has not been done and returns its endpoint.
func (ds *dataset) seeded() (*endpoint, error) {
	if _, err := ds.once("create", ds.seed); err != nil {
		return nil, err
	}
	return ds.endpoint()
}

func (ds *dataset) configMaps(cs *kubernetes.Clientset) typedcorev1.ConfigMapInterface {
	return cs.CoreV1().ConfigMaps(ds.ns)
}

// seed creates the namespace and its n ConfigMaps at c=32.
func (ds *dataset) seed() ([]figure, error) {
	ep, err := ds.endpoint()
	if err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ds.ns}}
	if _, err := ep.clientset.CoreV1().Namespaces().Create(ds.ctx, ns, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	if ds.rssBefore, err = vmRSS(ep.pid); err != nil {
		return nil, err
	}
	if ds.heapBefore, err = liveHeap(ds.ctx, ep.clientset.CoreV1().RESTClient()); err != nil {
		return nil, err
	}
	cms := ds.configMaps(ep.clientset)
	var lat latencies
	used, elapsed, err := ep.measure(func() (err error) {
		lat, _, err = fanOut(ds.ctx, ds.n, readPathConcurrency, func(ctx context.Context, i int) error {
			_, err := cms.Create(ctx, newConfigMap(objectName('s', int64(i)), ep.cl.payload), metav1.CreateOptions{})
			return err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("seeding %d ConfigMaps: %w", ds.n, err)
	}
	rss, err := vmRSS(ep.pid)
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("create c=%d", readPathConcurrency)
	figs := append(rateFigures(label, "op", ds.n, elapsed, used), latencyFigures(label, lat)...)
	return append(figs, memoryFigures("after seeding", rss, ds.rssBefore, ds.n)...), nil
}

// get reads -readpath.gets random seeded ConfigMaps at c=32.
func (ds *dataset) get() ([]figure, error) {
	ep, err := ds.seeded()
	if err != nil {
		return nil, err
	}
	cms := ds.configMaps(ep.clientset)
	var lat latencies
	used, elapsed, err := ep.measure(func() (err error) {
		lat, _, err = fanOut(ds.ctx, *readPathGets, readPathConcurrency, func(ctx context.Context, _ int) error {
			_, err := cms.Get(ctx, objectName('s', rand.Int64N(int64(ds.n))), metav1.GetOptions{})
			return err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("get c=%d", readPathConcurrency)
	return append(rateFigures(label, "op", *readPathGets, elapsed, used), latencyFigures(label, lat)...), nil
}

// list lists the namespace in full, in pages of listPage, at least 3 times and for
// at least -readpath.list-time.
func (ds *dataset) list() ([]figure, error) {
	ep, err := ds.seeded()
	if err != nil {
		return nil, err
	}
	cms := ds.configMaps(ep.clientset)
	items, lists := 0, 0
	used, elapsed, err := ep.measure(func() error {
		for start := time.Now(); lists < 3 || time.Since(start) < *readPathListTime; lists++ {
			n, err := listAll(ds.ctx, cms)
			if err != nil {
				return err
			}
			if n < ds.n {
				return fmt.Errorf("namespace %s lists %d ConfigMaps, want at least %d", ds.ns, n, ds.n)
			}
			items += n
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rss, err := vmRSS(ep.pid)
	if err != nil {
		return nil, err
	}
	heap, err := liveHeap(ds.ctx, ep.clientset.CoreV1().RESTClient())
	if err != nil {
		return nil, err
	}
	figs := rateFigures(fmt.Sprintf("list, pages of %d,", listPage), "item", items, elapsed, used)
	figs = append(figs, figure{"full lists", "lists", float64(lists)},
		figure{"server live heap after lists MiB", "heap-MiB", float64(heap) / (1 << 20)},
		figure{"server live heap growth since before seeding, B/object", "heap-B/object", float64(heap-ds.heapBefore) / float64(ds.n)})
	return append(figs, memoryFigures("after lists", rss, ds.rssBefore, ds.n)...), nil
}

// listAll lists the ConfigMaps of a namespace in pages and returns how many there are.
func listAll(ctx context.Context, cms typedcorev1.ConfigMapInterface) (int, error) {
	opts := metav1.ListOptions{Limit: listPage}
	for n := 0; ; {
		page, err := cms.List(ctx, opts)
		if err != nil {
			return n, err
		}
		n += len(page.Items)
		if page.Continue == "" {
			return n, nil
		}
		opts.Continue = page.Continue
	}
}

// watch opens w watches of the namespace at its current resourceVersion, then makes
// watchCreates creations at c=8 and waits until every watcher has received them all.
func (ds *dataset) watch(w int) ([]figure, error) {
	ep, err := ds.seeded()
	if err != nil {
		return nil, err
	}
	alone, err := ds.writes()
	if err != nil {
		return nil, fmt.Errorf("creations with no watcher: %w", err)
	}
	run, err := ds.fanOutWatches(ep, w, fmt.Sprintf("watch-N=%d-W=%d-%s", ds.n, w, ep.name), watch.Added, watchCreates,
		func(ctx context.Context) error { return ds.write(ctx, ep) })
	if err != nil {
		return nil, err
	}
	events, label := w*watchCreates, fmt.Sprintf("watch W=%d", w)
	figs := rateFigures(label, "event", events, run.elapsed, run.used)
	net := run.used.minus(alone.used)
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(events) }
	figs = append(figs,
		figure{label + " server CPU µs/event less the creates", "net-server-cpu-µs/event", per(net.server)},
		figure{label + " client CPU µs/event less the creates", "net-client-cpu-µs/event", per(net.self)},
		// The creations alone, at the rate of events a watcher would receive: the
		// most a fan-out paced by its creations could deliver.
		figure{label + " creations alone, as events/s", "alone-event/s", float64(events) / alone.elapsed.Seconds()})
	return append(figs, connFigures(label, run.carried, run.dialed, events)...), nil
}

// watched is what one watch fan-out measured.
type watched struct {
	used    cpu
	elapsed time.Duration
	// carried is what the watchers' connections carried meanwhile; dialed, how many
	// connections their clientset has dialed in all.
	carried connCounts
	dialed  int64
}

// fanOutWatches opens w watches of the namespace at its current resourceVersion,
// then, profiled under name if profiles are asked for, runs write, which makes n
// changes, and waits until every watch has received an event of type want for each.
func (ds *dataset) fanOutWatches(ep *endpoint, w int, name string, want watch.EventType, n int, write func(context.Context) error) (watched, error) {
	ctx, cancel := context.WithCancel(ds.ctx)
	defer cancel()
	watches, from, err := ds.openWatches(ctx, ep, w)
	if err != nil {
		return watched{}, err
	}
	before := ep.conns.counts()
	stopProfile, err := startProfile(name)
	if err != nil {
		return watched{}, err
	}
	serverProfile := ep.profileServer(ctx, name)
	used, elapsed, err := ep.measure(func() error { return ds.deliver(ctx, ep, watches, want, from, n, write) })
	if err := errors.Join(err, stopProfile(), serverProfile()); err != nil {
		return watched{}, err
	}
	after := ep.conns.counts()
	return watched{used: used, elapsed: elapsed, carried: after.minus(before), dialed: after.conns}, nil
}

// openWatches opens w watches of the namespace at its current resourceVersion and
// returns them with that revision.
func (ds *dataset) openWatches(ctx context.Context, ep *endpoint, w int) ([]watch.Interface, int64, error) {
	cms := ds.configMaps(ep.clientset)
	head, err := cms.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, 0, err
	}
	from, err := strconv.ParseInt(head.ResourceVersion, 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("list resourceVersion: %w", err)
	}
	watches := make([]watch.Interface, w)
	for i := range watches {
		if watches[i], err = cms.Watch(ctx, metav1.ListOptions{ResourceVersion: head.ResourceVersion}); err != nil {
			return nil, 0, fmt.Errorf("opening watch %d of %d: %w", i+1, w, err)
		}
	}
	return watches, from, nil
}

// watchEtcd opens w watches of the namespace at its current resourceVersion, then
// writes etcdChangeCount changes of seeded ConfigMaps straight into etcd at c=8 (at
// most -readpath.etcd-rate a second, if set) and waits until every watcher has
// received them all (MODIFIED events). No request reaches the server but the
// watches, so its CPU is the per-change path alone:
// reading the change from etcd, decoding it, filtering, encoding and sending it to
// each watcher, each server from its own storage encoding (Concord's JSON,
// kube-apiserver's protobuf).
func (ds *dataset) watchEtcd(w int) ([]figure, error) {
	ep, err := ds.seeded()
	if err != nil {
		return nil, err
	}
	changes, err := ds.etcdChanges(ep)
	if err != nil {
		return nil, err
	}
	limit := rate.NewLimiter(rate.Inf, 1)
	if *readPathEtcdRate > 0 {
		limit = rate.NewLimiter(rate.Limit(*readPathEtcdRate), 1)
	}
	put := func(ctx context.Context, i int) error {
		if err := limit.Wait(ctx); err != nil {
			return err
		}
		_, err := ep.cl.kv.Put(ctx, changes[i].key, string(changes[i].value))
		return err
	}
	run, err := ds.fanOutWatches(ep, w, fmt.Sprintf("watch-etcd-N=%d-W=%d-%s", ds.n, w, ep.name), watch.Modified, len(changes),
		func(ctx context.Context) error {
			_, _, err := fanOut(ctx, len(changes), watchWriterConcurrency, put)
			return err
		})
	if err != nil {
		return nil, err
	}
	events, label := w*len(changes), fmt.Sprintf("watch W=%d, changes written to etcd,", w)
	figs := rateFigures(label, "event", events, run.elapsed, run.used)
	return append(figs, connFigures(label, run.carried, run.dialed, events)...), nil
}

// etcdChange is one raw write of a ConfigMap's stored value.
type etcdChange struct {
	key   string
	value []byte
}

// etcdChanges returns etcdChangeCount changes of the seeded ConfigMaps, in turn: each is
// an object's value as stored now, with the first 8 bytes of its payload replaced
// by a number of its own, so that every change is a new value of the same size.
func (ds *dataset) etcdChanges(ep *endpoint) ([]etcdChange, error) {
	marker := []byte(strings.Repeat("x", 16))
	changes := make([]etcdChange, etcdChangeCount)
	values := map[string][]byte{}
	for i := range changes {
		key := ep.configMapKey(ds.ns, objectName('s', int64(i%ds.n)))
		stored, ok := values[key]
		if !ok {
			var err error
			if stored, err = ep.cl.rawGet(ds.ctx, key); err != nil {
				return nil, err
			}
			values[key] = stored
		}
		at := bytes.Index(stored, marker)
		if at < 0 {
			return nil, fmt.Errorf("the stored value of %s has no payload of x's", key)
		}
		value := bytes.Clone(stored)
		copy(value[at:], fmt.Sprintf("%08x", ds.seq.Add(1)))
		changes[i] = etcdChange{key, value}
	}
	return changes, nil
}

// measureWrites makes watchCreates creations through the writer at c=8, as a watch
// fan-out does, with no watcher, and returns the CPU they used and their time.
func (ds *dataset) measureWrites() (writesAlone, error) {
	ep, err := ds.seeded()
	if err != nil {
		return writesAlone{}, err
	}
	used, elapsed, err := ep.measure(func() error { return ds.write(ds.ctx, ep) })
	return writesAlone{used, elapsed}, err
}

// writesAlone is what a fan-out's creations cost, and took, with no watcher.
type writesAlone struct {
	used    cpu
	elapsed time.Duration
}

// write makes watchCreates creations through the writer at c=8.
func (ds *dataset) write(ctx context.Context, ep *endpoint) error {
	writer := ds.configMaps(ep.writer)
	_, _, err := fanOut(ctx, watchCreates, watchWriterConcurrency, func(ctx context.Context, _ int) error {
		_, err := writer.Create(ctx, newConfigMap(objectName('w', ds.seq.Add(1)), ep.cl.payload), metav1.CreateOptions{})
		return err
	})
	return err
}

// deliver runs write, which makes n changes, and waits until every watch has received
// an event of type want for each, failing if none arrives for watchStall.
func (ds *dataset) deliver(ctx context.Context, ep *endpoint, watches []watch.Interface, want watch.EventType, from int64, n int, write func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cms := ds.configMaps(ep.clientset)
	var received atomic.Int64
	errs := make(chan error, len(watches)+1)
	for _, w := range watches {
		go func() { errs <- receive(ctx, cms, w, want, from, n, &received) }()
	}
	go func() { errs <- write(ctx) }()
	return collect(errs, len(watches)+1, &received, int64(len(watches)*n), cancel)
}

// watchStall is how long a watch fan-out may go without delivering an event.
const watchStall = time.Minute

// collect waits for the results of n goroutines and returns the first error,
// calling cancel on it or when received has not grown for watchStall.
func collect(errs <-chan error, n int, received *atomic.Int64, want int64, cancel func()) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var firstErr error
	last, since := received.Load(), time.Now()
	for n > 0 {
		select {
		case err := <-errs:
			n--
			if err != nil && firstErr == nil {
				firstErr = err
				cancel() // unblock the others
			}
		case <-tick.C:
			if got := received.Load(); got != last {
				last, since = got, time.Now()
			} else if time.Since(since) > watchStall && firstErr == nil {
				firstErr = fmt.Errorf("no watch event for %v: %d of %d delivered", watchStall, got, want)
				cancel()
			}
		}
	}
	return firstErr
}
