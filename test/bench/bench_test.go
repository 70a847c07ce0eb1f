package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordproject/concord/test/ports"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// concurrencies are the numbers of goroutines (or watchers) each operation runs with.
var concurrencies = []int{1, 8, 32}

// BenchmarkConcord measures start-to-ready, then every operation at every
// concurrency, then prints the throughput ratios of the server to raw etcd. See the
// package documentation for what each sub-benchmark does.
func BenchmarkConcord(b *testing.B) {
	s := newSuite(b)
	b.Run("ready", func(b *testing.B) {
		b.Run("embedded-etcd", func(b *testing.B) { s.benchReady(b, "embedded-etcd", false) })
		b.Run("external-etcd", func(b *testing.B) { s.benchReady(b, "external-etcd", true) })
	})
	for _, op := range operations {
		b.Run(op.name, func(b *testing.B) {
			for _, c := range concurrencies {
				b.Run(fmt.Sprintf("c=%d", c), func(b *testing.B) {
					cl := s.cluster(b)
					sm, err := op.run(b, cl, c)
					if err != nil {
						b.Fatal(errors.Join(err, cl.etcd.exited(), cl.server.exited()))
					}
					s.report(b, op, c, sm)
				})
			}
		})
	}
	s.results.writeTable(os.Stdout, concurrencies)
}

// operation is one measured kind of request. run performs b.N of them over c
// goroutines and returns what it measured.
type operation struct {
	name string
	// objects is how many objects one operation carries, if more than one (lists).
	objects int
	// events marks operations counted as delivered watch events.
	events bool
	// floor marks operations served by the transport floor rather than the server.
	floor bool
	run   func(b *testing.B, cl *cluster, c int) (sample, error)
}

var operations = []operation{
	{name: "etcd-put", run: func(b *testing.B, cl *cluster, c int) (sample, error) {
		tmpl, err := cl.template(nsPut)
		if err != nil {
			return sample{}, err
		}
		return runOps(b, cl, c, func(ctx context.Context, _ int) error {
			name := objectName('p', cl.seq.Add(1))
			_, err := cl.kv.Put(ctx, configMapKey(nsPut, name), tmpl.value(name))
			return err
		})
	}},
	{name: "etcd-txn", run: func(b *testing.B, cl *cluster, c int) (sample, error) {
		tmpl, err := cl.template(nsTxn)
		if err != nil {
			return sample{}, err
		}
		return runOps(b, cl, c, func(ctx context.Context, _ int) error {
			name := objectName('t', cl.seq.Add(1))
			key := configMapKey(nsTxn, name)
			resp, err := cl.kv.Txn(ctx).
				If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
				Then(clientv3.OpPut(key, tmpl.value(name))).
				Commit()
			if err == nil && !resp.Succeeded {
				err = fmt.Errorf("%s already exists", key)
			}
			return err
		})
	}},
	{name: "create", run: func(b *testing.B, cl *cluster, c int) (sample, error) {
		cms := cl.clientset.CoreV1().ConfigMaps(nsCreate)
		return runOps(b, cl, c, func(ctx context.Context, _ int) error {
			_, err := cms.Create(ctx, newConfigMap(objectName('c', cl.seq.Add(1)), cl.payload), metav1.CreateOptions{})
			return err
		})
	}},
	{name: "update", run: func(b *testing.B, cl *cluster, c int) (sample, error) {
		cms := cl.clientset.CoreV1().ConfigMaps(nsUpdate)
		if err := cl.seedUpdates(b.Context()); err != nil {
			return sample{}, err
		}
		return runOps(b, cl, c, func(ctx context.Context, i int) error {
			// Unconditional (no resourceVersion), with a label that changes every time.
			cm := newConfigMap(objectName('u', int64(i%listSize)), cl.payload)
			cm.Labels = map[string]string{"update": strconv.Itoa(i)}
			_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
			return err
		})
	}},
	{name: "floor-create", floor: true, run: func(b *testing.B, cl *cluster, c int) (sample, error) {
		cs, err := cl.floor()
		if err != nil {
			return sample{}, err
		}
		cms := cs.CoreV1().ConfigMaps(nsCreate)
		return runOps(b, cl, c, func(ctx context.Context, _ int) error {
			_, err := cms.Create(ctx, newConfigMap(objectName('f', cl.seq.Add(1)), cl.payload), metav1.CreateOptions{})
			return err
		})
	}},
	{name: "etcd-get", run: func(b *testing.B, cl *cluster, c int) (sample, error) {
		return runOps(b, cl, c, func(ctx context.Context, i int) error {
			key := configMapKey(nsRead, objectName('r', int64(i%listSize)))
			resp, err := cl.kv.Get(ctx, key)
			if err == nil && len(resp.Kvs) != 1 {
				err = fmt.Errorf("%s not found", key)
			}
			return err
		})
	}},
	{name: "get", run: func(b *testing.B, cl *cluster, c int) (sample, error) {
		cms := cl.clientset.CoreV1().ConfigMaps(nsRead)
		return runOps(b, cl, c, func(ctx context.Context, i int) error {
			_, err := cms.Get(ctx, objectName('r', int64(i%listSize)), metav1.GetOptions{})
			return err
		})
	}},
	{name: "floor-get", floor: true, run: func(b *testing.B, cl *cluster, c int) (sample, error) {
		cs, err := cl.floor()
		if err != nil {
			return sample{}, err
		}
		cms := cs.CoreV1().ConfigMaps(nsRead)
		return runOps(b, cl, c, func(ctx context.Context, i int) error {
			_, err := cms.Get(ctx, objectName('r', int64(i%listSize)), metav1.GetOptions{})
			return err
		})
	}},
	{name: "etcd-range", objects: listSize, run: func(b *testing.B, cl *cluster, c int) (sample, error) {
		prefix := configMapKey(nsRead, "")
		return runOps(b, cl, c, func(ctx context.Context, _ int) error {
			resp, err := cl.kv.Get(ctx, prefix, clientv3.WithPrefix())
			if err == nil && len(resp.Kvs) != listSize {
				err = fmt.Errorf("%s holds %d keys, want %d", prefix, len(resp.Kvs), listSize)
			}
			return err
		})
	}},
	{name: "list", objects: listSize, run: func(b *testing.B, cl *cluster, c int) (sample, error) {
		cms := cl.clientset.CoreV1().ConfigMaps(nsRead)
		return runOps(b, cl, c, func(ctx context.Context, _ int) error {
			list, err := cms.List(ctx, metav1.ListOptions{})
			if err == nil && len(list.Items) != listSize {
				err = fmt.Errorf("namespace %s lists %d ConfigMaps, want %d", nsRead, len(list.Items), listSize)
			}
			return err
		})
	}},
	{name: "etcd-watch", events: true, run: func(b *testing.B, cl *cluster, c int) (sample, error) {
		prefix := configMapKey(nsWatch, "")
		return runWatch(b, cl, c, func(ctx context.Context, from int64) (func(n int) error, error) {
			wch := cl.kv.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(from+1))
			return func(n int) error {
				for got := 0; got < n; {
					resp, ok := <-wch
					if !ok {
						return fmt.Errorf("etcd watch closed after %d of %d events", got, n)
					}
					if err := resp.Err(); err != nil {
						return err
					}
					got += len(resp.Events)
				}
				return nil
			}, nil
		})
	}},
	{name: "watch", events: true, run: func(b *testing.B, cl *cluster, c int) (sample, error) {
		cms := cl.clientset.CoreV1().ConfigMaps(nsWatch)
		return runWatch(b, cl, c, func(ctx context.Context, from int64) (func(n int) error, error) {
			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(from, 10)})
			if err != nil {
				return nil, err
			}
			return func(n int) error { return receive(ctx, cms, w, watch.Added, from, n, nil) }, nil
		})
	}},
}

// sample is what one run of an operation measured.
type sample struct {
	ops     int
	elapsed time.Duration
	cpu     cpu       // CPU used during the run
	lat     latencies // one per operation; nil for watches
}

// receive waits until n events of type want, of ConfigMaps, have come after revision
// from, on w and, if the server ends it, on watches of cms opened again from the last
// event seen, counting them in received if it is not nil; it stops the watch it ends
// with.
func receive(ctx context.Context, cms typedcorev1.ConfigMapInterface, w watch.Interface, want watch.EventType, from int64, n int, received *atomic.Int64) error {
	defer func() { w.Stop() }()
	last := from
	for got, resumed := 0, 0; got < n; {
		ev, ok := <-w.ResultChan()
		if !ok {
			// The server ends a watch that falls too far behind, as Kubernetes
			// does; like an informer, watch again from the last event seen.
			if resumed++; resumed > 100 {
				return fmt.Errorf("watch closed after %d of %d events, %d times", got, n, resumed)
			}
			var err error
			if w, err = cms.Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(last, 10)}); err != nil {
				return err
			}
			continue
		}
		if ev.Type != want {
			return fmt.Errorf("watch event %d is %s, not %s: %v", got, ev.Type, want, ev.Object)
		}
		if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
			if rv, err := strconv.ParseInt(cm.ResourceVersion, 10, 64); err == nil {
				last = rv
			}
		}
		got++
		if received != nil {
			received.Add(1)
		}
	}
	return nil
}

// runOps calls call b.N times from c goroutines, i running over 0..b.N-1, and times
// each call and the whole run.
func runOps(b *testing.B, cl *cluster, c int, call func(ctx context.Context, i int) error) (sample, error) {
	before, err := cl.cpu()
	if err != nil {
		return sample{}, err
	}
	b.ResetTimer()
	lat, elapsed, err := fanOut(b.Context(), b.N, c, call)
	b.StopTimer()
	if err != nil {
		return sample{}, err
	}
	after, err := cl.cpu()
	if err != nil {
		return sample{}, err
	}
	return sample{ops: b.N, elapsed: elapsed, lat: lat, cpu: after.minus(before)}, nil
}

// fanOut calls call n times from c goroutines, i running over 0..n-1, and returns
// the duration of each call and of the whole run, or the first error (which stops
// the other goroutines).
func fanOut(ctx context.Context, n, c int, call func(ctx context.Context, i int) error) (latencies, time.Duration, error) {
	lat := make(latencies, n)
	var next atomic.Int64
	errs := make(chan error, c)
	start := time.Now()
	for range c {
		go func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					errs <- nil
					return
				}
				t0 := time.Now()
				if err := call(ctx, i); err != nil {
					next.Store(int64(n)) // stop the other goroutines
					errs <- err
					return
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	var firstErr error
	for range c {
		if err := <-errs; err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return lat, time.Since(start), firstErr
}

// openWatch starts watching the ConfigMaps of nsWatch after revision from, until ctx
// is done, and returns a function that waits for n events.
type openWatch func(ctx context.Context, from int64) (receive func(n int) error, err error)

// runWatch opens c watchers, then, timed, writes ceil(b.N/c) creations of ConfigMaps
// into nsWatch directly in etcd (watchBatch per transaction from watchWriters
// goroutines, so that the writer is not what limits the rate) and waits until every
// watcher has received all of them. An operation is one delivered event.
func runWatch(b *testing.B, cl *cluster, c int, open openWatch) (sample, error) {
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	tmpl, err := cl.template(nsWatch)
	if err != nil {
		return sample{}, err
	}
	head, err := cl.kv.Get(ctx, configMapKey(nsWatch, ""), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return sample{}, err
	}
	receivers := make([]func(int) error, c)
	for i := range receivers {
		if receivers[i], err = open(ctx, head.Header.Revision); err != nil {
			return sample{}, err
		}
	}
	perWatcher := (b.N + c - 1) / c
	errs := make(chan error, c+watchWriters)
	before, err := cl.cpu()
	if err != nil {
		return sample{}, err
	}
	b.ResetTimer()
	start := time.Now()
	var written atomic.Int64
	for range watchWriters {
		go func() {
			for {
				first := int(written.Add(watchBatch) - watchBatch)
				if first >= perWatcher {
					errs <- nil
					return
				}
				ops := make([]clientv3.Op, 0, watchBatch)
				for range min(watchBatch, perWatcher-first) {
					name := objectName('w', cl.seq.Add(1))
					ops = append(ops, clientv3.OpPut(configMapKey(nsWatch, name), tmpl.value(name)))
				}
				if _, err := cl.kv.Txn(ctx).Then(ops...).Commit(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for _, receive := range receivers {
		go func() { errs <- receive(perWatcher) }()
	}
	var firstErr error
	for range c + watchWriters {
		if err := <-errs; err != nil && firstErr == nil {
			firstErr = err
			cancel() // unblock the others
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	if firstErr != nil {
		return sample{}, firstErr
	}
	after, err := cl.cpu()
	if err != nil {
		return sample{}, err
	}
	return sample{ops: perWatcher * c, elapsed: elapsed, cpu: after.minus(before)}, nil
}

// report turns a sample into benchmark metrics and keeps it for the ratio table.
func (s *suite) report(b *testing.B, op operation, c int, sm sample) {
	rate := float64(sm.ops) / sm.elapsed.Seconds()
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(sm.ops) }
	if op.events {
		b.ReportMetric(rate, "events/s")
	} else {
		b.ReportMetric(rate, "ops/s")
	}
	if op.objects > 0 {
		b.ReportMetric(rate*float64(op.objects), "objects/s")
	}
	if sm.lat != nil {
		p50, p99 := sm.lat.quantiles()
		b.ReportMetric(float64(p50.Microseconds()), "p50-µs")
		b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	}
	server := sm.cpu.server
	if op.floor {
		server = sm.cpu.floor
	}
	b.ReportMetric(perOp(server), "server-cpu-µs/op")
	b.ReportMetric(perOp(sm.cpu.etcd), "etcd-cpu-µs/op")
	b.ReportMetric(perOp(sm.cpu.self), "client-cpu-µs/op")
	others := sm.cpu.others().Seconds() / (sm.elapsed.Seconds() * float64(runtime.NumCPU()))
	b.ReportMetric(100*others, "others-cpu-%")
	s.results.put(op.name, c, result{
		opsPerSec:   rate,
		serverCPUOp: time.Duration(float64(server) / float64(sm.ops)),
		othersCPU:   others,
	})
}

// benchReady times `concord server` from exec to the first 200 from /readyz on a data
// dir that an earlier start created, with the embedded etcd or against the suite's
// etcd. The first start, on the empty data dir, is reported as fresh-ms.
func (s *suite) benchReady(b *testing.B, name string, external bool) {
	ctx := b.Context()
	bin, dir := s.binary(b), b.TempDir()
	port, err := ports.Take()
	if err != nil {
		b.Fatal(err)
	}
	args := []string{"server", "--data-dir", filepath.Join(dir, "data"), "--secure-port", fmt.Sprint(port)}
	if external {
		args = append(args, "--etcd-servers", s.cluster(b).etcdURL)
	}
	logPath := filepath.Join(dir, "server.log")
	kubeconfig := filepath.Join(dir, "data", "admin.kubeconfig")

	p, err := startProcess("server", logPath, bin, args...)
	if err != nil {
		b.Fatal(err)
	}
	stopOrFail := func(p *process, err error) {
		if stopErr := p.stop(); err == nil {
			err = stopErr
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := waitForFile(ctx, p, kubeconfig, time.Minute); err != nil {
		stopOrFail(p, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		stopOrFail(p, err)
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		stopOrFail(p, err)
	}
	fresh, err := waitReady(ctx, p, cfg.Host, tlsConfig, time.Minute)
	stopOrFail(p, err)

	times := make(latencies, b.N)
	b.ResetTimer()
	for i := range b.N {
		p, err := startProcess("server", logPath, bin, args...)
		if err != nil {
			b.Fatal(err)
		}
		times[i], err = waitReady(ctx, p, cfg.Host, tlsConfig, time.Minute)
		b.StopTimer()
		stopOrFail(p, err)
		b.StartTimer()
	}
	b.StopTimer()
	p50, _ := times.quantiles()
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(slices.Min(times)), "min-ms")
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(times.max()), "max-ms")
	b.ReportMetric(ms(fresh), "fresh-ms")
	s.results.putStartup(name, p50)
}
