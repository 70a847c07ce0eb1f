package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/concordproject/concord/migration/migrator"
	"github.com/concordproject/concord/wire"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	migrationProfile = flag.String("concord.migration-profile", "",
		"directory for the server's CPU profile of each migration's first -concord.migration-profile-seconds, and its heap profile after")
	migrationProfileSeconds = flag.Int("concord.migration-profile-seconds", 30, "see -concord.migration-profile")
)

var migrationSizes = flag.String("concord.migration-sizes", "10000,100000",
	"comma-separated numbers of objects BenchmarkMigration migrates on each path")

// The resource BenchmarkMigration migrates: a custom resource with versions v1 and
// v2 of the same shape (None conversion), stored in v2. Its objects are written
// straight into etcd encoded in v1, as a server of the previous release would have
// left them, so that the server (and any migration controller it runs) never sees a
// storage version change: only the migrator under measurement rewrites them.
const (
	benchGroup     = "bench.example.com"
	benchNamespace = "bench-migrate"
	seedBatch      = 100
)

var benchWidgets = schema.GroupVersionResource{Group: benchGroup, Version: "v2", Resource: "widgets"}

func widgetKey(name string) string {
	return etcdPrefix + "/" + benchGroup + "/widgets/" + benchNamespace + "/" + name
}

// migrationBench holds what the sub-benchmarks of BenchmarkMigration share.
type migrationBench struct {
	cl       *cluster
	rest     *rest.Config
	template valueTemplate // a stored widget, encoded in v1, objectSize bytes
	rates    map[string]float64
	// adjacent holds, per migration sub-benchmark, the raw conditional-update rate
	// measured next to it (adjacentTxns before and after each migration).
	adjacent map[string]float64
	slots    map[int][][]txnSlot
	memory   map[string]migrationMemory
	mu       sync.Mutex
}

// BenchmarkMigration measures storage migration throughput, in objects rewritten per
// second, through the client-side path (list, then PUT each object back, at
// concurrency 1 and 16) and the server-side fast path (Concord's rewrite endpoint, its
// writes guarded by the widgets' StorageVersion as the migration controller's are),
// for each of -concord.migration-sizes objects of 1 KiB, next to raw etcd
// transaction throughput measured in the same run: conditional updates of 1 KiB
// values, If(ModRevision == rev).Then(Put), one per transaction, at concurrency 1 and
// 16, once at the start and again next to each migration (adjacentTxns before and
// after it, at its concurrency), since the machine's speed can drift over a run. Run it with -benchtime 1x (each iteration reseeds and migrates every object):
//
//	go test ./test/bench -run '^$' -bench Migration -benchtime 1x -timeout 60m
func BenchmarkMigration(b *testing.B) {
	s := newSuite(b)
	// A million objects of 1 KiB, and their rewritten revisions, pass etcd's 2 GiB.
	s.etcdArgs = []string{"--quota-backend-bytes", fmt.Sprint(int64(16) << 30)}
	mb := &migrationBench{rates: map[string]float64{}, adjacent: map[string]float64{}, memory: map[string]migrationMemory{}, slots: map[int][][]txnSlot{}}
	setup := sync.OnceValue(func() error {
		return mb.setup(b.Context(), s.cluster(b), filepath.Join(s.dir, "server", "admin.kubeconfig"))
	})
	var sizes []int
	for _, f := range strings.Split(*migrationSizes, ",") {
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(f), &n); err != nil || n <= 0 {
			b.Fatalf("-concord.migration-sizes: %q is not a positive number", f)
		}
		sizes = append(sizes, n)
	}
	for _, c := range []int{1, 16} {
		b.Run(fmt.Sprintf("etcd-txn/c=%d", c), func(b *testing.B) {
			if err := setup(); err != nil {
				b.Fatal(err)
			}
			mb.benchTxn(b, c)
		})
	}
	for _, n := range sizes {
		for _, p := range []struct {
			name string
			opts migrator.Options
		}{
			{"client/c=1", migrator.Options{Mode: migrator.ModeClient, Concurrency: 1}},
			{"client/c=16", migrator.Options{Mode: migrator.ModeClient, Concurrency: 16}},
			{"server", migrator.Options{Mode: migrator.ModeServer, PageSize: 10000}},
		} {
			b.Run(fmt.Sprintf("%s/n=%d", p.name, n), func(b *testing.B) {
				if err := setup(); err != nil {
					b.Fatal(err)
				}
				mb.benchMigrate(b, p.name, p.opts, n)
			})
		}
	}
	mb.writeTable(sizes)
}

// setup defines the resource and sizes its objects.
func (mb *migrationBench) setup(ctx context.Context, cl *cluster, kubeconfig string) error {
	mb.cl = cl
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS = -1
	mb.rest = rc
	if _, err := cl.clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	crds, err := apiextensionsclient.NewForConfig(rc)
	if err != nil {
		return err
	}
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"payload": {Type: "string"}}},
		}}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + benchGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: benchGroup, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Schema: schema},
				{Name: "v2", Served: true, Storage: true, Schema: schema},
			},
		},
	}
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	widgets := dyn.Resource(benchWidgets).Namespace(benchNamespace)
	probe := func(name string, payload int) ([]byte, error) {
		obj := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": benchWidgets.GroupVersion().String(), "kind": "Widget",
			"metadata": map[string]interface{}{"name": name},
			"spec":     map[string]interface{}{"payload": strings.Repeat("x", payload)},
		}}
		for deadline := time.Now().Add(30 * time.Second); ; {
			_, err := widgets.Create(ctx, obj, metav1.CreateOptions{})
			if err == nil {
				break
			}
			if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
				return nil, err
			}
			time.Sleep(50 * time.Millisecond) // the definition is not served yet
		}
		return cl.rawGet(ctx, widgetKey(name))
	}
	const small = 256
	stored, err := probe(objectName('s', 0), small)
	if err != nil {
		return err
	}
	// Size the payload on a v2 object; its v1 form has the same length.
	stored, err = probe(objectName('s', 1), small+objectSize-len(stored))
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := json.Unmarshal(stored, &obj); err != nil {
		return err
	}
	obj["apiVersion"] = benchGroup + "/v1"
	meta := obj["metadata"].(map[string]any)
	meta["name"] = "#-########"
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if mb.template, err = templateOf(data, "#-########"); err != nil {
		return err
	}
	if len(data) != objectSize {
		return fmt.Errorf("sized for %d bytes, the v1 widget has %d", objectSize, len(data))
	}
	// The server's own migration controllers migrate every resource they see for the
	// first time: wait until they are done with the widgets, or that migration would
	// rewrite the seeded objects under the one measured.
	return waitMigrated(ctx, dyn, 2*time.Minute)
}

// waitMigrated waits until a StorageVersionMigration of the widgets has succeeded.
func waitMigrated(ctx context.Context, dyn dynamic.Interface, timeout time.Duration) error {
	svms := dyn.Resource(schema.GroupVersionResource{Group: "storagemigration.k8s.io", Version: "v1", Resource: "storageversionmigrations"})
	for deadline := time.Now().Add(timeout); ; {
		list, err := svms.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, m := range list.Items {
			group, _, _ := unstructured.NestedString(m.Object, "spec", "resource", "group")
			resource, _, _ := unstructured.NestedString(m.Object, "spec", "resource", "resource")
			conds, _, _ := unstructured.NestedSlice(m.Object, "status", "conditions")
			for _, c := range conds {
				c, _ := c.(map[string]any)
				if group == benchGroup && resource == "widgets" && c["type"] == "Succeeded" && c["status"] == "True" {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server's migration of the widgets did not succeed within %s", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// seed replaces the seeded widgets with n objects encoded in v1, written straight into
// etcd, seedBatch per transaction from 4 goroutines.
func (mb *migrationBench) seed(ctx context.Context, n int) error {
	if _, err := mb.cl.kv.Delete(ctx, widgetKey("m-"), clientv3.WithPrefix()); err != nil {
		return err
	}
	name := func(i int) string { return objectName('m', int64(i)) }
	return seedRaw(ctx, mb.cl.kv, 0, n,
		func(i int) string { return widgetKey(name(i)) },
		func(i int) string { return mb.template.value(name(i)) })
}

// migrationMemory is the server's memory during the migrations of one sub-benchmark:
// its highest resident memory and highest anonymous resident memory (the executable's
// pages left out), the most that grew over the resident memory just before a
// migration (KiB), and its live heap after the last one (bytes).
type migrationMemory struct{ peakRSS, peakAnon, growth, heapAfter int64 }

// benchMigrate reseeds and migrates n objects b.N times, timing the migrations only.
func (mb *migrationBench) benchMigrate(b *testing.B, path string, opts migrator.Options, n int) {
	ctx := b.Context()
	m, err := migrator.New(mb.rest, opts)
	if err != nil {
		b.Fatal(err)
	}
	res := migrator.Resource{GroupVersionResource: benchWidgets, Namespaced: true}
	var elapsed, txnElapsed time.Duration
	txns := 0
	// The baseline next to a migration: raw updates at its concurrency (the fast path's
	// is compared with c=16, as in the table).
	txnC := opts.Concurrency
	if opts.Mode == migrator.ModeServer {
		txnC = 16
	}
	adjacent := func() {
		d, err := mb.runTxns(ctx, txnC, adjacentTxns)
		if err != nil {
			b.Fatal(err)
		}
		txnElapsed += d
		txns += adjacentTxns
	}
	var used cpu
	var mem migrationMemory
	for b.Loop() {
		b.StopTimer()
		if err := mb.seed(ctx, n); err != nil {
			b.Fatal(err)
		}
		mb.profileIntake(ctx, path, n)
		// The server takes in the seeded objects (its watch caches and the garbage
		// collector's informers follow every resource): let it finish before measuring.
		if err := waitIdle(ctx, mb.cl.server.pid(), 10*time.Minute); err != nil {
			b.Fatal(err)
		}
		adjacent()
		before, err := mb.cl.cpu()
		if err != nil {
			b.Fatal(err)
		}
		rssBefore, err := vmRSS(mb.cl.server.pid())
		if err != nil {
			b.Fatal(err)
		}
		rss := sampleRSS(mb.cl.server.pid())
		b.StartTimer()
		start := time.Now()
		// As the migration controller does, every write is guarded by the widgets'
		// StorageVersion (in etcd's transaction with the write).
		if res.StorageVersion, err = mb.storageVersion(ctx); err != nil {
			b.Fatal(err)
		}
		profiled := mb.profile(ctx, path, n)
		cp, err := m.Migrate(ctx, res, migrator.Checkpoint{}, nil)
		profiled()
		elapsed += time.Since(start)
		b.StopTimer()
		peak, peakAnon, rerr := rss.stop()
		if rerr != nil {
			b.Fatal(rerr)
		}
		mem.peakRSS, mem.peakAnon, mem.growth = max(mem.peakRSS, peak), max(mem.peakAnon, peakAnon), max(mem.growth, peak-rssBefore)
		after, cerr := mb.cl.cpu()
		if cerr != nil {
			b.Fatal(cerr)
		}
		used = used.plus(after.minus(before))
		if err != nil {
			b.Fatal(err)
		}
		if cp.Migrated != int64(n) || cp.Failed != 0 {
			b.Fatalf("migrated %+v, want all %d rewritten", cp.Counts, n)
		}
		if err := mb.checkEncoded(ctx, n); err != nil {
			b.Fatal(err)
		}
		adjacent()
		b.StartTimer()
	}
	objects := float64(n * b.N)
	rate := objects / elapsed.Seconds()
	b.ReportMetric(rate, "objects/s")
	b.ReportMetric(float64(used.server.Microseconds())/objects, "server-µs/object")
	b.ReportMetric(float64(used.etcd.Microseconds())/objects, "etcd-µs/object")
	b.ReportMetric(float64(used.self.Microseconds())/objects, "client-µs/object")
	b.ReportMetric(100*used.others().Seconds()/(elapsed.Seconds()*float64(runtime.NumCPU())), "others-cpu-%")
	_, heap, cached, err := serverMemory(ctx, mb.cl.server.pid(), mb.cl.clientset.CoreV1().RESTClient())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cached)/(1<<20), "server-cache-after-MiB")
	b.ReportMetric(float64(mem.peakRSS)/1024, "server-peak-rss-MiB")
	b.ReportMetric(float64(mem.peakAnon)/1024, "server-peak-rss-anon-MiB")
	b.ReportMetric(float64(mem.growth)/1024, "server-rss-growth-MiB")
	b.ReportMetric(float64(heap)/(1<<20), "server-heap-after-MiB")
	txnRate := float64(txns) / txnElapsed.Seconds()
	b.ReportMetric(txnRate, "adjacent-txn/s")
	b.ReportMetric(0, "ns/op")
	mb.mu.Lock()
	mb.rates[fmt.Sprintf("%s/n=%d", path, n)] = rate
	mb.adjacent[fmt.Sprintf("%s/n=%d", path, n)] = txnRate
	mem.heapAfter = heap
	mb.memory[fmt.Sprintf("%s/n=%d", path, n)] = mem
	mb.mu.Unlock()
}

// profile starts, with -concord.migration-profile, a CPU profile of the server for
// the first -concord.migration-profile-seconds of a migration; the function it
// returns waits for it and writes it, then the server's heap profile, to the
// profile directory (beside them the heap profiles before the migration and as of
// the last collection within those seconds).
func (mb *migrationBench) profile(ctx context.Context, path string, n int) func() {
	dir := *migrationProfile
	if dir == "" {
		return func() {}
	}
	name := filepath.Join(dir, fmt.Sprintf("%s-n=%d", strings.ReplaceAll(path, "/", "-"), n))
	rc := mb.cl.clientset.CoreV1().RESTClient()
	// The heap profile before: the one after, with it as its base (pprof -base), tells
	// what the migration allocated.
	if body, err := rc.Get().AbsPath("/debug/pprof/heap").DoRaw(ctx); err == nil {
		_ = os.WriteFile(name+".before.heap.pprof", body, 0o600)
	}
	if body, err := rc.Get().AbsPath("/debug/pprof/heap").Param("debug", "1").DoRaw(ctx); err == nil {
		_ = os.WriteFile(name+".before.heap.txt", body, 0o600)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if body, err := rc.Get().AbsPath("/debug/pprof/profile").Param("seconds", fmt.Sprint(*migrationProfileSeconds)).DoRaw(ctx); err == nil {
			_ = os.WriteFile(name+".cpu.pprof", body, 0o600)
		}
		// As of the last collection during the migration: its in-use figures are
		// what was live then.
		if body, err := rc.Get().AbsPath("/debug/pprof/heap").DoRaw(ctx); err == nil {
			_ = os.WriteFile(name+".during.heap.pprof", body, 0o600)
		}
	}()
	return func() {
		<-done
		if body, err := rc.Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx); err == nil {
			_ = os.WriteFile(name+".heap.pprof", body, 0o600)
		}
	}
}

// profileIntake writes, with -concord.migration-profile, the server's goroutines
// and live heap as the seeding ends: what it holds of the changes it has yet to take
// in.
func (mb *migrationBench) profileIntake(ctx context.Context, path string, n int) {
	if *migrationProfile == "" {
		return
	}
	name := filepath.Join(*migrationProfile, fmt.Sprintf("%s-n=%d", strings.ReplaceAll(path, "/", "-"), n))
	rc := mb.cl.clientset.CoreV1().RESTClient()
	if body, err := rc.Get().AbsPath("/debug/pprof/goroutine").Param("debug", "1").DoRaw(ctx); err == nil {
		_ = os.WriteFile(name+".intake.goroutine.txt", body, 0o600)
	}
	if body, err := rc.Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx); err == nil {
		_ = os.WriteFile(name+".intake.heap.pprof", body, 0o600)
	}
}

// checkEncoded reads etcd and checks that every widget is encoded in v2.
func (mb *migrationBench) checkEncoded(ctx context.Context, n int) error {
	resp, err := mb.cl.kv.Get(ctx, widgetKey("m-"), clientv3.WithPrefix())
	if err != nil {
		return err
	}
	v2 := 0
	for _, kv := range resp.Kvs {
		var head struct{ APIVersion string }
		if err := json.Unmarshal(kv.Value, &head); err != nil {
			return err
		}
		if head.APIVersion == benchGroup+"/v2" {
			v2++
		}
	}
	if v2 != n || len(resp.Kvs) != n {
		return fmt.Errorf("after the migration etcd holds %d widgets, %d in v2; want all %d in v2", len(resp.Kvs), v2, n)
	}
	return nil
}

// txnBatch is the number of conditional updates one iteration of the etcd-txn
// sub-benchmarks performs, so that -benchtime 1x still measures a steady rate.
const txnBatch = 5000

// benchTxn measures conditional updates of 1 KiB values, txnBatch per iteration, over
// c goroutines, each on its own keys, each update conditioned on the revision the
// previous one of that key returned.
func (mb *migrationBench) benchTxn(b *testing.B, c int) {
	ctx := b.Context()
	var elapsed time.Duration
	ops := 0
	for b.Loop() {
		d, err := mb.runTxns(ctx, c, txnBatch)
		if err != nil {
			b.Fatal(err)
		}
		elapsed += d
		ops += txnBatch
	}
	rate := float64(ops) / elapsed.Seconds()
	b.ReportMetric(rate, "txn/s")
	b.ReportMetric(0, "ns/op")
	mb.mu.Lock()
	mb.rates[fmt.Sprintf("etcd-txn/c=%d", c)] = rate
	mb.mu.Unlock()
}

// txnSlot is one key that raw conditional updates rewrite, with its last revision.
type txnSlot struct {
	key, value string
	rev        int64
}

// runTxns makes n raw conditional updates over c goroutines, each on its own 64 keys
// (written once, on first use for c), and returns how long they took.
func (mb *migrationBench) runTxns(ctx context.Context, c, n int) (time.Duration, error) {
	const keysPer = 64
	kv := mb.cl.kv
	mb.mu.Lock()
	slots := mb.slots[c]
	mb.mu.Unlock()
	if slots == nil {
		slots = make([][]txnSlot, c)
		for g := range c {
			for k := range keysPer {
				name := objectName('u', int64(c*1000+g*keysPer+k))
				key := etcdPrefix + "/bench-txn-update/" + name
				v := mb.template.value(name)
				resp, err := kv.Put(ctx, key, v)
				if err != nil {
					return 0, err
				}
				slots[g] = append(slots[g], txnSlot{key: key, value: v, rev: resp.Header.Revision})
			}
		}
		mb.mu.Lock()
		mb.slots[c] = slots
		mb.mu.Unlock()
	}
	var next atomic.Int64
	errs := make(chan error, c)
	start := time.Now()
	var wg sync.WaitGroup
	for g := range c {
		wg.Go(func() {
			for i := 0; next.Add(1) <= int64(n); i++ {
				s := &slots[g][i%keysPer]
				resp, err := kv.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(s.key), "=", s.rev)).
					Then(clientv3.OpPut(s.key, s.value)).Commit()
				if err == nil && !resp.Succeeded {
					err = fmt.Errorf("%s moved", s.key)
				}
				if err != nil {
					errs <- err
					return
				}
				s.rev = resp.Header.Revision
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	return elapsed, <-errs
}

// adjacentTxns is how many raw conditional updates measure the baseline next to each
// migration (before and after it), so that its ratio compares two rates of the same
// phase of the machine.
const adjacentTxns = 2000

// writeTable prints the migration rates next to raw etcd transaction throughput.
func (mb *migrationBench) writeTable(sizes []int) {
	mb.mu.Lock()
	defer mb.mu.Unlock()
	txn1, txn16 := mb.rates["etcd-txn/c=1"], mb.rates["etcd-txn/c=16"]
	if txn1 == 0 && txn16 == 0 {
		return
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "\nraw etcd conditional updates:\t%.0f txn/s at c=1\t%.0f txn/s at c=16\t\n", txn1, txn16)
	fmt.Fprintln(w, "migration\tobjects/s\t/ etcd-txn c=1\t/ etcd-txn c=16\tetcd-txn/s next to it\tratio to it\tserver peak RSS MiB\tRSS growth MiB\tlive heap after MiB\t")
	for _, n := range sizes {
		for _, p := range []string{"client/c=1", "client/c=16", "server"} {
			key := fmt.Sprintf("%s/n=%d", p, n)
			rate, ok := mb.rates[key]
			if !ok {
				continue
			}
			adj := mb.adjacent[key]
			mem := mb.memory[key]
			fmt.Fprintf(w, "%s n=%d\t%.0f\t%.2f\t%.2f\t%.0f\t%.2f\t%.0f\t%.0f\t%.0f\t\n", p, n, rate, ratioOf(rate, txn1), ratioOf(rate, txn16), adj, ratioOf(rate, adj),
				float64(mem.peakRSS)/1024, float64(mem.growth)/1024, float64(mem.heapAfter)/(1<<20))
		}
	}
	_ = w.Flush()
}

func ratioOf(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func (c cpu) plus(o cpu) cpu {
	return cpu{server: c.server + o.server, etcd: c.etcd + o.etcd, self: c.self + o.self, machine: c.machine + o.machine}
}

// storageVersionsGVR is the StorageVersion API's resource.
var storageVersionsGVR = schema.GroupVersionResource{Group: "internal.apiserver.k8s.io", Version: "v1alpha1", Resource: "storageversions"}

// storageVersion returns the resourceVersion of the widgets' StorageVersion, which
// the migration controller gives its migrations to guard their writes with.
func (mb *migrationBench) storageVersion(ctx context.Context) (string, error) {
	dyn, err := dynamic.NewForConfig(mb.rest)
	if err != nil {
		return "", err
	}
	sv, err := dyn.Resource(storageVersionsGVR).Get(ctx, wire.StorageVersionName(benchWidgets.GroupResource()), metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("the widgets' StorageVersion: %w", err)
	}
	return sv.GetResourceVersion(), nil
}
