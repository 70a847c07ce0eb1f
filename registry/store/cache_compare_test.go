package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/objectjson"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/watchcache"
	"github.com/concordproject/concord/storage"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
)

// TestCacheAnswersAsEtcd writes random histories (creations, label changes, deletions
// by concurrent writers in two namespaces) and checks that a store answering from its
// watch cache gives the answers a store reading etcd gives: consistent lists with and
// without selectors, namespaces and limits; continue tokens of pages the cache served
// while the history was being written (the cache's kept snapshots against etcd's
// exact reads at their revision); exact-revision lists; and watches from the start of
// the history, event by event.
func TestCacheAnswersAsEtcd(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { compareHistory(t, seed) })
	}
}

// listCase is one list's options, and the namespace it lists.
type listCase struct {
	ns   string
	opts metav1.ListOptions
}

func compareHistory(t *testing.T, seed uint64) {
	ctx := t.Context()
	reg := prometheus.NewRegistry()
	cached, etcd, res := comparedStores(t, watchcache.Options{HistorySize: 256, Registerer: reg})
	start, err := etcd.storage.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	cases := randomCases(rng, 40)
	var watches []watch.Interface
	for _, c := range cases[:6] {
		for _, s := range []*Store{cached, etcd} {
			w, err := s.Watch(ctx, Ref{Resource: res, Version: "v1", Namespace: c.ns}, metav1.ListOptions{
				ResourceVersion: fmt.Sprint(start), LabelSelector: c.opts.LabelSelector, AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			watches = append(watches, w)
		}
	}
	tokens := writeHistory(t, cached, res, seed)
	end, err := etcd.storage.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(readsCounter(t, reg, "list", "cache"))
	for _, c := range cases {
		compareLists(t, cached, etcd, res, c)
	}
	for _, tok := range tokens {
		compareLists(t, cached, etcd, res, tok)
	}
	fromCache := testutil.ToFloat64(readsCounter(t, reg, "list", "cache")) - before
	t.Logf("%d lists and %d continued pages compared, %v answered by the cache", len(cases), len(tokens), fromCache)
	if fromCache < float64(len(cases)+min(len(tokens), 32)) {
		t.Fatalf("the cache answered %v of the compared lists, want the %d consistent ones and a continuation of each kept snapshot",
			fromCache, len(cases))
	}
	for i := 0; i < len(watches); i += 2 {
		a, b := drain(t, watches[i], end), drain(t, watches[i+1], end)
		if !slices.Equal(a, b) {
			t.Fatalf("watch %v: the cache sent\n%s\netcd sent\n%s", cases[i/2], strings.Join(a, "\n"), strings.Join(b, "\n"))
		}
	}
}

// comparedStores returns, over one etcd, a store answering from watch caches and one
// reading etcd, and a namespaced custom resource.
func comparedStores(t *testing.T, opts watchcache.Options) (cached, etcd *Store, res *registry.Resource) {
	t.Helper()
	cli := etcdtest.Start(t)
	cached, res = storeOn(t, storage.New(cli, "/registry"))
	etcd = NewStore(storage.New(cli, "/registry"))
	// Bookmarks tell a watch it has seen everything up to a revision.
	cached.BookmarkInterval, etcd.BookmarkInterval = 100*time.Millisecond, 100*time.Millisecond
	runCaches(t, cached, opts)
	return cached, etcd, res
}

func readsCounter(t *testing.T, reg *prometheus.Registry, verb, source string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "reads"})
	for _, mf := range mfs {
		if mf.GetName() != "concord_watch_cache_reads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["verb"] == verb && labels["source"] == source {
				g.Add(m.GetCounter().GetValue())
			}
		}
	}
	return g
}

func randomCases(rng *rand.Rand, n int) []listCase {
	out := make([]listCase, n)
	for i := range out {
		c := listCase{ns: []string{"", "a", "b"}[rng.IntN(3)]}
		c.opts.LabelSelector = []string{"", "", "color=red", "color!=red", "color in (blue)"}[rng.IntN(5)]
		if rng.IntN(2) == 0 {
			c.opts.Limit = int64(1 + rng.IntN(7))
		}
		out[i] = c
	}
	return out
}

// writeHistory runs writers of random changes while a reader lists pages from s (the
// caching store), and returns the continue options of the pages it was given.
func writeHistory(t *testing.T, s *Store, res *registry.Resource, seed uint64) []listCase {
	ctx := t.Context()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() { randomWrites(ctx, t, s, res, rand.New(rand.NewPCG(seed, uint64(g)+10)), g) })
	}
	var tokens []listCase
	rng := rand.New(rand.NewPCG(seed, 2))
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for {
		select {
		case <-done:
			return tokens
		default:
		}
		c := randomCases(rng, 1)[0]
		c.opts.Limit = int64(1 + rng.IntN(4))
		l, err := s.List(ctx, Ref{Resource: res, Version: "v1", Namespace: c.ns}, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if l.GetContinue() != "" {
			c.opts.Continue = l.GetContinue()
			tokens = append(tokens, c)
		}
	}
}

func randomWrites(ctx context.Context, t *testing.T, s *Store, res *registry.Resource, rng *rand.Rand, g int) {
	for i := range 150 {
		ns := []string{"a", "b"}[rng.IntN(2)]
		name := fmt.Sprintf("w%d-%d", g, rng.IntN(12))
		ref := Ref{Resource: res, Version: "v1", Namespace: ns, Name: name}
		_, err := s.Get(ctx, ref, metav1.GetOptions{})
		switch {
		case err != nil:
			o := gadget(ns, name, i)
			o.SetLabels(map[string]string{"color": []string{"red", "blue"}[rng.IntN(2)]})
			_, err = s.Create(ctx, Ref{Resource: res, Version: "v1", Namespace: ns}, o, WriteOptions{})
		case rng.IntN(3) == 0:
			_, _, err = s.Delete(ctx, ref, DeleteOptions{})
		default:
			color := []string{"red", "blue", "green"}[rng.IntN(3)]
			_, _, err = s.Update(ctx, ref, func(_ context.Context, cur *registry.Object) (*registry.Object, error) {
				cur.SetLabels(map[string]string{"color": color})
				return cur, nil
			}, UpdateOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsAlreadyExists(err) {
			t.Error(err)
			return
		}
	}
}

// compareLists lists c through both stores and fails on any difference.
func compareLists(t *testing.T, cached, etcd *Store, res *registry.Resource, c listCase) {
	t.Helper()
	ref := Ref{Resource: res, Version: "v1", Namespace: c.ns}
	a, errA := cached.List(t.Context(), ref, c.opts)
	b, errB := etcd.List(t.Context(), ref, c.opts)
	if da, db := describeList(a, errA), describeList(b, errB); da != db {
		t.Fatalf("list %s %+v: the cache answered\n%s\netcd answered\n%s", c.ns, c.opts, da, db)
	}
	// Encoded lists (twice: the second from encodings the cache kept) carry the
	// same items, encoded.
	enc := ItemEncoder{Format: "json", Encode: func(o *registry.Object) ([]byte, error) { return objectjson.Marshal(o.Object) }}
	for range 2 {
		e, errE := cached.ListEncoded(t.Context(), ref, c.opts, enc)
		if de, db := describeEncoded(t, e, errE), describeList(b, errB); de != db {
			t.Fatalf("encoded list %s %+v: the cache answered\n%s\netcd answered\n%s", c.ns, c.opts, de, db)
		}
	}
}

// describeEncoded describes an encoded list as describeList does a list.
func describeEncoded(t *testing.T, l *EncodedList, err error) string {
	t.Helper()
	if err != nil {
		return describeList(nil, err)
	}
	out := &unstructured.UnstructuredList{Object: map[string]interface{}{}}
	out.SetResourceVersion(l.Meta.ResourceVersion)
	out.SetContinue(l.Meta.Continue)
	if l.Meta.RemainingItemCount != nil {
		out.SetRemainingItemCount(l.Meta.RemainingItemCount)
	}
	for _, b := range l.Items {
		m, err := objectjson.UnmarshalObject(b)
		if err != nil {
			t.Fatal(err)
		}
		out.Items = append(out.Items, unstructured.Unstructured{Object: m})
	}
	return describeList(out, nil)
}

func describeList(l *unstructured.UnstructuredList, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rv=%s continue=%q", l.GetResourceVersion(), l.GetContinue())
	if n := l.GetRemainingItemCount(); n != nil {
		fmt.Fprintf(&b, " remaining=%d", *n)
	}
	for _, o := range l.Items {
		fmt.Fprintf(&b, "\n%s/%s@%s %v", o.GetNamespace(), o.GetName(), o.GetResourceVersion(), o.GetLabels())
	}
	return b.String()
}

// drain reads w until an event or bookmark at revision end or later, and describes
// the events.
func drain(t *testing.T, w watch.Interface, end int64) []string {
	t.Helper()
	var out []string
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %d events", len(out))
			}
			o := unwrap(ev.Object)
			rv := mustRV(t, o)
			if ev.Type != watch.Bookmark {
				out = append(out, fmt.Sprintf("%s %s/%s@%d %v", ev.Type, o.GetNamespace(), o.GetName(), rv, o.GetLabels()))
			}
			if rv >= end {
				return out
			}
		case <-timeout:
			t.Fatalf("no event or bookmark at %d after %d events", end, len(out))
		}
	}
}
