package integration

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// Lists with no resourceVersion answered by one server's watch cache see every write
// another server acknowledged before them, including for a resource that nobody
// writes meanwhile (its cache learns from etcd's progress notifications that it is
// current: every such list is answered from memory, none waits out its time and
// falls back to etcd). Pages the cache started continue on another server, which
// reads etcd at the same revision, with the same answer.
func TestWatchCacheConsistentAcrossServers(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	ctx := t.Context()
	a, b := c.Servers[0].Clientset(t).CoreV1(), c.Servers[1].Clientset(t).CoreV1()
	before := cacheReads(t, c.Servers[0])
	const n = 30
	for i := range n {
		name := fmt.Sprint("cm-", i)
		if _, err := b.ConfigMaps("default").Create(ctx, configMap(name, map[string]string{"i": fmt.Sprint(i)}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		l, err := a.ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != i+1 || l.Items[len(l.Items)-1].Name != name && !hasConfigMap(l.Items, name) {
			t.Fatalf("list %d on server 0 after a create on server 1: %d items, want %d with %s", i, len(l.Items), i+1, name)
		}
		if _, err := a.PodTemplates("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	after := cacheReads(t, c.Servers[0])
	for _, r := range []string{"core/configmaps", "core/podtemplates"} {
		// (The server's own informers may list too.)
		cached, etcd := after[r+" list cache"]-before[r+" list cache"], after[r+" list etcd"]-before[r+" list etcd"]
		if cached < n || etcd != 0 {
			t.Errorf("%s: %v lists answered by the watch cache and %v by etcd; want all %d of the test's from the cache", r, cached, etcd, n)
		}
	}

	// Pages: the first two from server 0's cache, the rest on server 1 (etcd).
	first, err := a.ConfigMaps("default").List(ctx, metav1.ListOptions{Limit: 7})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ConfigMaps("default").Create(ctx, configMap("late", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	second, err := a.ConfigMaps("default").List(ctx, metav1.ListOptions{Limit: 7, Continue: first.Continue})
	if err != nil {
		t.Fatal(err)
	}
	elsewhere, err := b.ConfigMaps("default").List(ctx, metav1.ListOptions{Limit: 7, Continue: first.Continue})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(second.Items, elsewhere.Items) || second.ResourceVersion != elsewhere.ResourceVersion ||
		second.Continue != elsewhere.Continue || *second.RemainingItemCount != *elsewhere.RemainingItemCount {
		t.Fatalf("second page: server 0 (cache) and server 1 (etcd) differ:\n%s\n%s", pageOf(second), pageOf(elsewhere))
	}
	if second.ResourceVersion != first.ResourceVersion || hasConfigMap(second.Items, "late") || *second.RemainingItemCount != n-14 {
		t.Fatalf("second page is not of the first page's snapshot: %s", pageOf(second))
	}
}

func hasConfigMap(items []corev1.ConfigMap, name string) bool {
	for _, cm := range items {
		if cm.Name == name {
			return true
		}
	}
	return false
}

func pageOf(l *corev1.ConfigMapList) string {
	names := make([]string, len(l.Items))
	for i, cm := range l.Items {
		names[i] = cm.Name + "@" + cm.ResourceVersion
	}
	return fmt.Sprintf("rv %s, continue %q, remaining %v: %v", l.ResourceVersion, l.Continue, *l.RemainingItemCount, names)
}

// cacheReads scrapes a server's concord_watch_cache_reads_total, keyed
// "<resource> <verb> <source>".
func cacheReads(t *testing.T, s *harness.Server) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range scrape(t, s)["concord_watch_cache_reads_total"].GetMetric() {
		l := labelsOf(m)
		out[l["resource"]+" "+l["verb"]+" "+l["source"]] = m.GetCounter().GetValue()
	}
	return out
}

// scrape reads a server's /metrics.
func scrape(t *testing.T, s *harness.Server) map[string]*dto.MetricFamily {
	t.Helper()
	resp, body := do(t, s.Config(), http.MethodGet, "/metrics", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

func labelsOf(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// A storage migration re-encodes every widget in the new storage version; to a
// watcher of the server's cache the objects are the same, so it sees no event for
// them (only its bookmarks), and then exactly the one real change that follows. After
// the flip, lists answered from the cache convert as fresh reads do: each listed
// object, in either version, equals a get of it (read from etcd).
func TestWatchCacheMigrationIsInvisible(t *testing.T) {
	t.Parallel()
	c := startMigrationCluster(t, 1)
	s := c.Servers[0]
	e := newMigrationEnv(t, c, "wc.example.com", "v1")
	const n = 40
	e.seed("w", "v1", n, 3)
	dyn := s.Dynamic(t).Resource(e.gvr("v1")).Namespace("default")
	list, err := dyn.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := dyn.Watch(t.Context(), metav1.ListOptions{ResourceVersion: list.GetResourceVersion(), AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	e.flip("v2")
	runControllers(t, only(fastConfig(s.Config(), prometheus.NewRegistry()), s, e.gr))
	waitPersisted(t, s.Dynamic(t), e.gr, e.hash("v2"), e.hash("v2"))
	if got := e.encodings(); got["wc.example.com/v2"] != n {
		t.Fatalf("after the migration etcd holds %v, want all %d in v2", got, n)
	}
	w0, err := dyn.Get(t.Context(), "w-0000", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(w0.Object, "changed", "spec", "note"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Update(t.Context(), w0, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Bookmark {
			continue
		}
		o := ev.Object.(*unstructured.Unstructured)
		if note, _, _ := unstructured.NestedString(o.Object, "spec", "note"); ev.Type != watch.Modified || o.GetName() != "w-0000" || note != "changed" || o.GetAPIVersion() != "wc.example.com/v1" {
			t.Fatalf("the watcher saw %s %s (%s, note %q): want only the real change, MODIFIED w-0000 in v1", ev.Type, o.GetName(), o.GetAPIVersion(), note)
		}
		break
	}
	for _, v := range []string{"v1", "v2"} {
		r := s.Dynamic(t).Resource(e.gvr(v)).Namespace("default")
		l, err := r.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != n {
			t.Fatalf("%s list: %d widgets, want %d", v, len(l.Items), n)
		}
		for _, item := range l.Items {
			got, err := r.Get(t.Context(), item.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Object, item.Object) {
				t.Fatalf("%s: listed from the cache\n%v\nread from etcd\n%v", v, item.Object, got.Object)
			}
		}
	}
}

// Past --watch-cache-memory-limit a resource's cache stops and its reads go to etcd,
// with the same answers; --watch-cache=false reads etcd every time. Both are counted.
func TestWatchCacheLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		set    func(o *controlplane.Options)
		evicts bool
	}{
		{"memory-limit", func(o *controlplane.Options) { o.Store.WatchCacheMemoryLimit = "64Ki" }, true},
		{"off", func(o *controlplane.Options) { o.Store.WatchCache = false }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := harness.Start(t, 1, harness.WithServerOptions(func(_ int, o *controlplane.Options) { tc.set(o) }))
			s := c.Servers[0]
			cms := s.Clientset(t).CoreV1().ConfigMaps("default")
			// A watcher starts the configmaps' cache (nothing in the server watches
			// them for long: the garbage collector reads etcd).
			w, err := cms.Watch(t.Context(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			const n = 100
			data := map[string]string{"payload": strings.Repeat("x", 1024)}
			for i := range n {
				if _, err := cms.Create(t.Context(), configMap(fmt.Sprint("big-", i), data), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			evictions := func() float64 {
				n := 0.0
				for _, m := range scrape(t, s)["concord_watch_cache_evictions_total"].GetMetric() {
					if l := labelsOf(m); l["resource"] == "core/configmaps" && l["reason"] == "memory" {
						n += m.GetCounter().GetValue()
					}
				}
				return n
			}
			if tc.evicts {
				// The cache stops once it has taken in the writes past its limit; a
				// list before that is answered from it, rightly.
				waitFor(t, "the configmaps cache to stop at its memory limit", func() (bool, error) { return evictions() > 0, nil })
			}
			for range 3 {
				l, err := cms.List(t.Context(), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if len(l.Items) != n {
					t.Fatalf("%d configmaps listed, want %d", len(l.Items), n)
				}
			}
			reads := cacheReads(t, s)
			if reads["core/configmaps list etcd"] < 3 || reads["core/configmaps list cache"] != 0 {
				t.Fatalf("configmaps lists: %v from etcd, %v from the cache; want all 3 from etcd", reads["core/configmaps list etcd"], reads["core/configmaps list cache"])
			}
			if n := evictions(); (n > 0) != tc.evicts {
				t.Fatalf("%v evictions for memory of the configmaps cache (in %v)", n, time.Since(start))
			}
		})
	}
}

// Watchers of one resource in different representations (JSON and protobuf typed
// clients, a dynamic client, a metadata-only client) share each change's conversion
// and encodings; each still gets its own representation of every change.
func TestWatchFanOutRepresentations(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	s := c.Servers[0]
	ctx := t.Context()
	pb := s.Config()
	pb.AcceptContentTypes, pb.ContentType = "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf"
	pbClient := kubernetes.NewForConfigOrDie(pb)
	cms := s.Clientset(t).CoreV1().ConfigMaps("default")
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := metav1.ListOptions{ResourceVersion: list.ResourceVersion}
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	var ws []watch.Interface
	for _, open := range []func() (watch.Interface, error){
		func() (watch.Interface, error) { return cms.Watch(ctx, opts) },
		func() (watch.Interface, error) { return pbClient.CoreV1().ConfigMaps("default").Watch(ctx, opts) },
		func() (watch.Interface, error) {
			return s.Dynamic(t).Resource(gvr).Namespace("default").Watch(ctx, opts)
		},
		func() (watch.Interface, error) {
			return s.Metadata(t).Resource(gvr).Namespace("default").Watch(ctx, opts)
		},
	} {
		w, err := open()
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ws = append(ws, w)
	}
	const n = 5
	for i := range n {
		if _, err := cms.Create(ctx, configMap(fmt.Sprint("fan-", i), map[string]string{"i": fmt.Sprint(i)}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for k, w := range ws {
		for i := range n {
			ev := <-w.ResultChan()
			obj, err := meta.Accessor(ev.Object)
			if err != nil || ev.Type != watch.Added || obj.GetName() != fmt.Sprint("fan-", i) {
				t.Fatalf("watcher %d, event %d: %s %T %v", k, i, ev.Type, ev.Object, err)
			}
			var data string
			switch o := ev.Object.(type) {
			case *corev1.ConfigMap:
				data = o.Data["i"]
			case *unstructured.Unstructured:
				data, _, _ = unstructured.NestedString(o.Object, "data", "i")
			case *metav1.PartialObjectMetadata:
				data = fmt.Sprint(i) // metadata only
			}
			if data != fmt.Sprint(i) {
				t.Fatalf("watcher %d, event %d (%T): data %q", k, i, ev.Object, data)
			}
		}
	}
}

// A WatchList (sendInitialEvents) is answered from the watch cache: an ADDED event
// for every object of a state at least as new as the resourceVersion asked for (the
// newest, for none), the bookmark that ends them, then the changes.
func TestWatchListFromCache(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	ctx := t.Context()
	a, b := c.Servers[0].Clientset(t).CoreV1().ConfigMaps("default"), c.Servers[1].Clientset(t).CoreV1().ConfigMaps("default")
	// More objects than the server decodes at a time for a watch's starting state (256),
	// every third left out by the label selector, others in the namespace.
	const n = 600
	wanted := 1 // wl-last
	for i := range n {
		cm := configMap(fmt.Sprint("wl-", i), nil)
		if i%3 != 0 {
			cm.Labels = map[string]string{"keep": "yes"}
			wanted++
		}
		if _, err := b.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	other := c.Servers[1].Clientset(t).CoreV1().ConfigMaps("kube-system")
	if _, err := other.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "wl-elsewhere", Labels: map[string]string{"keep": "yes"}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.List(ctx, metav1.ListOptions{}); err != nil { // server 0's cache starts
		t.Fatal(err)
	}
	last, err := b.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "wl-last", Labels: map[string]string{"keep": "yes"}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := cacheReads(t, c.Servers[0])
	w, err := a.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptrTo(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		ResourceVersion: last.ResourceVersion, AllowWatchBookmarks: true, LabelSelector: "keep=yes"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	names := map[string]bool{}
	for ev := range w.ResultChan() {
		cm := ev.Object.(*corev1.ConfigMap)
		if ev.Type == watch.Bookmark {
			if cm.Annotations[metav1.InitialEventsAnnotationKey] != "true" || rvNumber(t, cm.ResourceVersion) < rvNumber(t, last.ResourceVersion) {
				t.Fatalf("bookmark %v at %s before the initial events ended", cm.Annotations, cm.ResourceVersion)
			}
			break
		}
		if ev.Type != watch.Added || cm.Labels["keep"] != "yes" || cm.Namespace != "default" || names[cm.Name] {
			t.Fatalf("initial event %s %s/%s %v (seen before: %v)", ev.Type, cm.Namespace, cm.Name, cm.Labels, names[cm.Name])
		}
		names[cm.Name] = true
	}
	if len(names) != wanted || !names["wl-last"] {
		t.Fatalf("initial events for %d objects, want %d with wl-last", len(names), wanted)
	}
	if _, err := b.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "wl-after", Labels: map[string]string{"keep": "yes"}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Bookmark {
			continue
		}
		if cm := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Added || cm.Name != "wl-after" {
			t.Fatalf("after the initial events: %s %s, want ADDED wl-after", ev.Type, cm.Name)
		}
		break
	}
	// The same starting state in JSON (a dynamic client), sent from the same kept
	// item encodings the protobuf watch made, or made now in JSON.
	cms := c.Servers[0].Dynamic(t).Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace("default")
	jw, err := cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptrTo(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks: true, LabelSelector: "keep=yes"})
	if err != nil {
		t.Fatal(err)
	}
	defer jw.Stop()
	jsonNames := map[string]bool{}
	for ev := range jw.ResultChan() {
		u := ev.Object.(*unstructured.Unstructured)
		if ev.Type == watch.Bookmark {
			break
		}
		if ev.Type != watch.Added || u.GetKind() != "ConfigMap" || u.GetLabels()["keep"] != "yes" || u.GetResourceVersion() == "" {
			t.Fatalf("JSON initial event %s %s %s %v", ev.Type, u.GetKind(), u.GetName(), u.GetLabels())
		}
		jsonNames[u.GetName()] = true
	}
	names["wl-after"] = true
	if !reflect.DeepEqual(jsonNames, names) {
		t.Fatalf("JSON initial events for %d objects, want the %d of the protobuf watch and wl-after", len(jsonNames), len(names)-1)
	}
	after := cacheReads(t, c.Servers[0])
	if after["core/configmaps watch cache"]-before["core/configmaps watch cache"] < 2 || after["core/configmaps watch etcd"] != before["core/configmaps watch etcd"] {
		t.Fatalf("the WatchLists were not answered by the cache: %v", after)
	}
}

// The garbage collector follows every resource straight from etcd: a resource that
// only it follows has no watch cache (the server keeps none of its objects in
// memory for the collector's sake), yet its objects are collected. A list starts one.
func TestGarbageCollectorStartsNoWatchCache(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	s := c.Servers[0]
	ctx := t.Context()
	templates := s.Clientset(t).CoreV1().PodTemplates("default")
	template := func(name string, owners ...metav1.OwnerReference) *corev1.PodTemplate {
		return &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owners},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}
	}
	owner, err := templates.Create(ctx, template("owner"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := templates.Create(ctx, template("dependent", metav1.OwnerReference{APIVersion: "v1", Kind: "PodTemplate", Name: owner.Name, UID: owner.UID}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := templates.Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the collector to delete the dependent", func() (bool, error) {
		_, err := templates.Get(ctx, "dependent", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	reads := cacheReads(t, s)
	if reads["core/podtemplates watch cache"] != 0 || reads["core/podtemplates watch etcd"] == 0 {
		t.Fatalf("the podtemplates, which only the garbage collector follows, were watched through a watch cache: %v",
			subset(reads, "core/podtemplates "))
	}
	waitFor(t, "a list to start the podtemplates' cache and be answered from it", func() (bool, error) {
		_, err := templates.List(ctx, metav1.ListOptions{})
		return cacheReads(t, s)["core/podtemplates list cache"] > 0, err
	})
}

// subset keeps the entries of m whose keys start with prefix.
func subset(m map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}
