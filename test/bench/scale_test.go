package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/concordproject/concord/test/ports"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

var scaleSizes = flag.String("scale.sizes", "10000,100000",
	"comma-separated, growing total numbers of objects BenchmarkScale measures the server at (1000000 spreads them over ten resources)")

const (
	// scalePerResource is the most objects BenchmarkScale puts in one resource: past
	// it, objects go to the next resource (ConfigMaps, then scaleKinds custom ones).
	scalePerResource = 100_000
	scaleKinds       = 9
	scaleInformers   = 10
	scaleNamespace   = "bench-scale"
	scaleGroup       = "scale.example.com"
)

// BenchmarkScale grows one etcd through each of -scale.sizes objects of 1 KiB (at
// most 100,000 per resource: ConfigMaps first, then custom resources of up to nine
// kinds), written straight into etcd as the server stores them, and at each size
// starts a new Concord server on it and measures:
//   - the time from the process's start until /readyz answers 200;
//   - its memory at rest once it is idle: resident, live heap after a collection,
//     and what its watch caches estimate they hold;
//   - a full relist by 10 informers of every populated resource at once (client-go
//     reflectors, streaming their initial lists as client-go 0.37 does, into stores
//     that count): the time until all have synced, the server's peak resident memory
//     meanwhile, and its live heap and cache memory after;
//   - etcd's database size.
//
// Every phase runs once, whatever b.N; run it with -benchtime 1x:
//
//	go test ./test/bench -run '^$' -bench Scale -benchtime 1x -timeout 120m [-scale.sizes 10000,100000,1000000]
func BenchmarkScale(b *testing.B) {
	sizes, err := positiveInts("-scale.sizes", *scaleSizes)
	if err != nil {
		b.Fatal(err)
	}
	if last := sizes[len(sizes)-1]; last > scalePerResource*(1+scaleKinds) {
		b.Fatalf("-scale.sizes: %d is more than %d resources of %d objects", last, 1+scaleKinds, scalePerResource)
	}
	s := newSuite(b)
	s.etcdArgs = []string{"--quota-backend-bytes", fmt.Sprint(int64(16) << 30)} // a million objects pass 2 GiB
	sc := &scale{s: s}
	setup := sync.OnceValue(func() error { return sc.setup(b.Context()) })
	for _, n := range sizes {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			if err := setup(); err != nil {
				b.Fatal(err)
			}
			row, err := sc.measure(b.Context(), n)
			if err != nil {
				b.Fatal(err)
			}
			row.report(b)
			sc.rows = append(sc.rows, row)
		})
	}
	sc.writeTable()
}

// scale holds what the sizes of BenchmarkScale share: the suite's etcd, the
// resources objects are spread over, and a template of a stored object of each.
type scale struct {
	s         *suite
	cl        *cluster
	resources []scaleResource
	seeded    []int // objects already in each resource
	rows      []scaleRow
}

// scaleResource is one resource objects are seeded into.
type scaleResource struct {
	gvr      schema.GroupVersionResource
	prefix   string // its etcd key prefix, up to the namespace
	template valueTemplate
}

func (r scaleResource) key(i int) string {
	return fmt.Sprintf("%s/%s/%s", r.prefix, scaleNamespace, objectName('s', int64(i)))
}

// setup starts the suite's etcd and server, defines the custom resources, takes a
// template of a 1 KiB stored object of each resource, and stops the server: every
// size gets a server of its own.
func (sc *scale) setup(ctx context.Context) error {
	cl, err := sc.s.start()
	if err != nil {
		return err
	}
	sc.cl = cl
	if _, err := cl.clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scaleNamespace}},
		metav1.CreateOptions{}); err != nil {
		return err
	}
	cmTemplate, err := newTemplate(cl.stored, scaleNamespace)
	if err != nil {
		return err
	}
	sc.resources = []scaleResource{{gvr: corev1.SchemeGroupVersion.WithResource("configmaps"),
		prefix: etcdPrefix + "/core/configmaps", template: cmTemplate}}
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(sc.s.dir, "server", "admin.kubeconfig"))
	if err != nil {
		return err
	}
	for k := range scaleKinds {
		r, err := sc.defineKind(ctx, rc, k)
		if err != nil {
			return fmt.Errorf("custom resource %d: %w", k, err)
		}
		sc.resources = append(sc.resources, r)
	}
	sc.seeded = make([]int, len(sc.resources))
	return cl.server.stop()
}

// defineKind defines the custom resource things<k>, creates one object of 1 KiB
// stored, and returns the resource with that object as its template.
func (sc *scale) defineKind(ctx context.Context, rc *rest.Config, k int) (scaleResource, error) {
	plural := fmt.Sprintf("things%d", k)
	gvr := schema.GroupVersionResource{Group: scaleGroup, Version: "v1", Resource: plural}
	crds, err := apiextensionsclient.NewForConfig(rc)
	if err != nil {
		return scaleResource{}, err
	}
	props := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"payload": {Type: "string"}}},
		}}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + scaleGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: scaleGroup, Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: fmt.Sprintf("Thing%d", k)},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, Schema: props}},
		},
	}
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return scaleResource{}, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return scaleResource{}, err
	}
	r := scaleResource{gvr: gvr, prefix: etcdPrefix + "/" + scaleGroup + "/" + plural}
	create := func(name string, payload int) ([]byte, error) {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": crd.Spec.Names.Kind,
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"payload": strings.Repeat("x", payload)},
		}}
		for deadline := time.Now().Add(30 * time.Second); ; {
			_, err := dyn.Resource(gvr).Namespace(scaleNamespace).Create(ctx, obj, metav1.CreateOptions{})
			if err == nil {
				break
			}
			if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
				return nil, err
			}
			time.Sleep(50 * time.Millisecond) // the definition is not served yet
		}
		return sc.cl.rawGet(ctx, r.prefix+"/"+scaleNamespace+"/"+name)
	}
	const small = 256
	stored, err := create(objectName('p', 0), small)
	if err != nil {
		return r, err
	}
	if stored, err = create(objectName('t', 0), small+objectSize-len(stored)); err != nil {
		return r, err
	}
	if len(stored) != objectSize {
		return r, fmt.Errorf("sized for %d bytes, the stored object has %d", objectSize, len(stored))
	}
	r.template, err = newTemplate(stored, scaleNamespace)
	return r, err
}

// seed fills the resources up to n objects in all, scalePerResource per resource.
func (sc *scale) seed(ctx context.Context, n int) error {
	for i, r := range sc.resources {
		want := min(max(n-i*scalePerResource, 0), scalePerResource)
		if want <= sc.seeded[i] {
			continue
		}
		name := func(j int) string { return objectName('s', int64(j)) }
		if err := seedRaw(ctx, sc.cl.kv, sc.seeded[i], want, r.key,
			func(j int) string { return r.template.value(name(j)) }); err != nil {
			return err
		}
		sc.seeded[i] = want
	}
	return nil
}

// scaleRow is what BenchmarkScale measured at one size.
type scaleRow struct {
	n, resources                 int
	ready                        time.Duration
	restRSS, restHeap, restCache int64 // bytes
	relist                       time.Duration
	relistPeakRSS, relistHeap    int64 // bytes
	relistCache, etcdDB          int64 // bytes
	relistCPU                    cpu   // used during the relist
}

func (r scaleRow) report(b *testing.B) {
	mib := func(v int64) float64 { return float64(v) / (1 << 20) }
	b.ReportMetric(r.ready.Seconds(), "ready-s")
	b.ReportMetric(mib(r.restRSS), "rest-rss-MiB")
	b.ReportMetric(mib(r.restHeap), "rest-heap-MiB")
	b.ReportMetric(r.relist.Seconds(), "relist-s")
	b.ReportMetric(mib(r.relistPeakRSS), "relist-peak-rss-MiB")
	b.ReportMetric(mib(r.relistHeap), "relist-heap-MiB")
	b.ReportMetric(mib(r.relistCache), "cache-MiB")
	b.ReportMetric(mib(r.etcdDB), "etcd-db-MiB")
	objects := float64(r.n * scaleInformers)
	b.ReportMetric(float64(r.relistCPU.server.Nanoseconds())/1e3/objects, "relist-server-µs/object")
	b.ReportMetric(float64(r.relistCPU.self.Nanoseconds())/1e3/objects, "relist-client-µs/object")
	b.ReportMetric(0, "ns/op")
}

// measure seeds the store to n objects, starts a server on it and measures it.
func (sc *scale) measure(ctx context.Context, n int) (scaleRow, error) {
	row := scaleRow{n: n}
	if err := sc.seed(ctx, n); err != nil {
		return row, fmt.Errorf("seeding: %w", err)
	}
	for _, c := range sc.seeded {
		if c > 0 {
			row.resources++
		}
	}
	srv, err := sc.startServer(ctx, n)
	if err != nil {
		return row, err
	}
	defer func() { _ = srv.p.stop() }()
	row.ready = srv.ready
	if err := waitIdle(ctx, srv.p.pid(), time.Minute); err != nil {
		return row, err
	}
	rc := srv.clientset.CoreV1().RESTClient()
	if row.restRSS, row.restHeap, row.restCache, err = serverMemory(ctx, srv.p.pid(), rc); err != nil {
		return row, err
	}
	rss := sampleRSS(srv.p.pid())
	before, err := sc.cl.cpuOf(srv.p.pid())
	if err != nil {
		return row, err
	}
	row.relist, err = sc.relist(ctx, srv)
	peak, _, rerr := rss.stop()
	if err := errors.Join(err, rerr); err != nil {
		return row, fmt.Errorf("relist: %w", err)
	}
	after, err := sc.cl.cpuOf(srv.p.pid())
	if err != nil {
		return row, err
	}
	row.relistCPU = after.minus(before)
	row.relistPeakRSS = peak * 1024
	if _, row.relistHeap, row.relistCache, err = serverMemory(ctx, srv.p.pid(), rc); err != nil {
		return row, err
	}
	status, err := sc.cl.kv.Status(ctx, sc.cl.etcdURL)
	if err != nil {
		return row, err
	}
	row.etcdDB = status.DbSize
	return row, srv.p.stop()
}

// scaleServer is a server BenchmarkScale started, ready.
type scaleServer struct {
	p         *process
	ready     time.Duration
	config    *rest.Config
	clientset *kubernetes.Clientset
	dynamic   dynamic.Interface
}

// startServer starts a Concord server on the suite's etcd and data directory (its
// certificates made at setup) and waits until it is ready.
func (sc *scale) startServer(ctx context.Context, n int) (*scaleServer, error) {
	bin, err := sc.s.bin()
	if err != nil {
		return nil, err
	}
	port, err := ports.Take()
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(sc.s.dir, "server")
	name := fmt.Sprintf("server-N=%d", n)
	p, err := startProcess(name, filepath.Join(sc.s.dir, name+".log"), bin, "server", "--etcd-servers", sc.cl.etcdURL,
		"--data-dir", dataDir, "--secure-port", fmt.Sprint(port))
	if err != nil {
		return nil, err
	}
	srv := &scaleServer{p: p}
	fail := func(err error) (*scaleServer, error) { return nil, errors.Join(err, p.stop()) }
	if srv.config, err = clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "admin.kubeconfig")); err != nil {
		return fail(err)
	}
	srv.config.Host = fmt.Sprintf("https://127.0.0.1:%d", port)
	srv.config.QPS = -1
	tlsConfig, err := rest.TLSConfigFor(srv.config)
	if err != nil {
		return fail(err)
	}
	if srv.ready, err = waitReady(ctx, p, srv.config.Host, tlsConfig, 10*time.Minute); err != nil {
		return fail(err)
	}
	if srv.clientset, err = kubernetes.NewForConfig(srv.config); err != nil {
		return fail(err)
	}
	if srv.dynamic, err = dynamic.NewForConfig(srv.config); err != nil {
		return fail(err)
	}
	return srv, nil
}

// waitIdle waits until process pid has used under 5% of a core for a whole second.
func waitIdle(ctx context.Context, pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last, err := cpuTime(pid)
	if err != nil {
		return err
	}
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		now, err := cpuTime(pid)
		if err != nil {
			return err
		}
		if now-last < 50*time.Millisecond {
			return nil
		}
		last = now
	}
	return fmt.Errorf("the server was still busy %v after it became ready", timeout)
}

// serverMemory returns a server's resident memory, its live heap after a collection,
// and the memory its watch caches estimate they hold, in bytes.
func serverMemory(ctx context.Context, pid int, rc rest.Interface) (rss, heap, cached int64, err error) {
	kib, err := vmRSS(pid)
	if err != nil {
		return 0, 0, 0, err
	}
	if heap, err = liveHeap(ctx, rc); err != nil {
		return 0, 0, 0, err
	}
	metrics, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	c, _ := metricSum(metrics, "concord_watch_cache_memory_bytes")
	return kib * 1024, heap, int64(c), nil
}

// relist runs scaleInformers informers of each populated resource at once until
// each has synced, one resource after the other (ten informers of a million objects
// would not fit in this process's memory), and returns how long that took.
func (sc *scale) relist(ctx context.Context, srv *scaleServer) (time.Duration, error) {
	var total time.Duration
	for i, r := range sc.resources {
		if sc.seeded[i] == 0 {
			continue
		}
		d, err := sc.relistOne(ctx, srv, r, sc.seeded[i]+templateObjects(i))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", r.gvr.Resource, err)
		}
		total += d
	}
	return total, nil
}

// relistOne runs scaleInformers informers of r until each holds want objects.
func (sc *scale) relistOne(ctx context.Context, srv *scaleServer, r scaleResource, want int) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stores := make([]*countingStore, scaleInformers)
	start := time.Now()
	for i := range stores {
		lw, obj := sc.listWatch(srv, r)
		stores[i] = newCountingStore(want)
		go cache.NewReflectorWithOptions(lw, obj, stores[i], cache.ReflectorOptions{}).Run(ctx.Done())
	}
	timeout := time.After(30 * time.Minute)
	for _, st := range stores {
		select {
		case <-st.synced:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-timeout:
			return 0, fmt.Errorf("an informer has not synced after 30 minutes (%d of %d objects)", st.count(), want)
		}
	}
	return time.Since(start), nil
}

// templateObjects is the number of objects a resource holds beyond the seeded ones:
// the probe and template objects of the custom resources.
func templateObjects(i int) int {
	if i == 0 {
		return 0
	}
	return 2
}

// listWatch returns how an informer of r lists and watches: ConfigMaps through the
// typed client (protobuf), custom resources through the dynamic client (JSON).
func (sc *scale) listWatch(srv *scaleServer, r scaleResource) (cache.ListerWatcher, runtime.Object) {
	if r.gvr.Group == "" {
		return cache.NewListWatchFromClient(srv.clientset.CoreV1().RESTClient(), r.gvr.Resource, scaleNamespace, fields.Everything()),
			&corev1.ConfigMap{}
	}
	ri := srv.dynamic.Resource(r.gvr).Namespace(scaleNamespace)
	return &cache.ListWatch{
		ListWithContextFunc:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return ri.List(ctx, o) },
		WatchFuncWithContext: ri.Watch,
	}, &unstructured.Unstructured{}
}

// countingStore is an informer's store that counts what it holds instead of keeping
// it, so that ten informers of a million objects fit in the benchmark's memory; it is
// synced once a relist has replaced its content with want objects.
type countingStore struct {
	mu     sync.Mutex
	keys   map[string]struct{}
	want   int
	synced chan struct{}
	once   sync.Once
}

func newCountingStore(want int) *countingStore {
	return &countingStore{keys: map[string]struct{}{}, want: want, synced: make(chan struct{})}
}

func (s *countingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}

func (s *countingStore) put(obj any) error {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[key] = struct{}{}
	return nil
}

func (s *countingStore) Add(obj any) error    { return s.put(obj) }
func (s *countingStore) Update(obj any) error { return s.put(obj) }
func (s *countingStore) Delete(obj any) error {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keys, key)
	return nil
}
func (s *countingStore) List() []any { return nil }
func (s *countingStore) ListKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.keys))
	for k := range s.keys {
		keys = append(keys, k)
	}
	return keys
}
func (s *countingStore) Get(obj any) (any, bool, error) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, false, err
	}
	return s.GetByKey(key)
}
func (s *countingStore) GetByKey(key string) (any, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.keys[key]
	return nil, ok, nil
}

// Replace is a relist's end: the store now holds exactly list.
func (s *countingStore) Replace(list []any, _ string) error {
	keys := make(map[string]struct{}, len(list))
	for _, obj := range list {
		key, err := cache.MetaNamespaceKeyFunc(obj)
		if err != nil {
			return err
		}
		keys[key] = struct{}{}
	}
	s.mu.Lock()
	s.keys = keys
	s.mu.Unlock()
	if len(keys) >= s.want {
		s.once.Do(func() { close(s.synced) })
	}
	return nil
}
func (s *countingStore) Resync() error { return nil }

// writeTable prints what every size measured.
func (sc *scale) writeTable() {
	if len(sc.rows) == 0 {
		return
	}
	mib := func(v int64) string { return fmt.Sprintf("%.0f", float64(v)/(1<<20)) }
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "\nobjects\tresources\tetcd db MiB\tready s\trest RSS MiB\trest heap MiB\trest cache MiB\trelist s\t"+
		"server / client CPU µs/object\trelist peak RSS MiB\theap after MiB\tcache after MiB\tcache B/object\t")
	for _, r := range sc.rows {
		per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(r.n*scaleInformers) }
		fmt.Fprintf(w, "%d\t%d\t%s\t%.2f\t%s\t%s\t%s\t%.1f\t%.1f / %.1f\t%s\t%s\t%s\t%.0f\t\n", r.n, r.resources, mib(r.etcdDB), r.ready.Seconds(),
			mib(r.restRSS), mib(r.restHeap), mib(r.restCache), r.relist.Seconds(), per(r.relistCPU.server), per(r.relistCPU.self),
			mib(r.relistPeakRSS), mib(r.relistHeap), mib(r.relistCache), float64(r.relistCache)/float64(r.n))
	}
	_ = w.Flush()
}
