package storage_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/storage"
	"github.com/prometheus/client_golang/prometheus"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// seedKeys writes n keys under /test/<prefix>/, a hundred to a transaction.
func seedKeys(tb testing.TB, cli *clientv3.Client, prefix string, n int) {
	tb.Helper()
	for i := 0; i < n; i += 100 {
		var ops []clientv3.Op
		for j := i; j < min(i+100, n); j++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/test/%s/%07d", prefix, j), fmt.Sprint("v", j)))
		}
		if _, err := cli.Txn(tb.Context()).Then(ops...).Commit(); err != nil {
			tb.Fatal(err)
		}
	}
}

// pageThrough reads every key under prefix in pages of limit at one revision, and
// returns them with the pages' Remaining figures.
func pageThrough(t *testing.T, s *storage.Store, prefix string, opts storage.ListOptions) ([]string, []int64) {
	t.Helper()
	var keys []string
	var remaining []int64
	for {
		page, err := s.List(t.Context(), prefix, opts)
		if err != nil {
			t.Fatal(err)
		}
		if opts.Revision == 0 {
			opts.Revision = page.Revision
		} else if page.Revision != opts.Revision {
			t.Fatalf("page read at %d, asked %d", page.Revision, opts.Revision)
		}
		if int64(len(page.Items)) > opts.Limit {
			t.Fatalf("page of %d items, limit %d", len(page.Items), opts.Limit)
		}
		for _, kv := range page.Items {
			if want := fmt.Sprint("v", mustAtoi(t, kv.Key[strings.LastIndex(kv.Key, "/")+1:])); string(kv.Value) != want {
				t.Fatalf("%s holds %q, want %q", kv.Key, kv.Value, want)
			}
			keys = append(keys, kv.Key)
		}
		remaining = append(remaining, page.Remaining)
		if !page.More {
			return keys, remaining
		}
		if len(page.Items) == 0 {
			t.Fatal("an empty page says there is more")
		}
		opts.Start = page.Items[len(page.Items)-1].Key + "\x00"
	}
}

func mustAtoi(t *testing.T, s string) int {
	var n int
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Uncounted pages hold what counted pages hold, at the revision of the first, and say
// nothing of what remains but that something does; they leave no stream behind.
func TestUncountedPages(t *testing.T) {
	cli := etcdtest.Start(t)
	s := storage.New(cli, "/test")
	const n = 1000
	seedKeys(t, cli, "g/r", n)
	seedKeys(t, cli, "g/rr", 10) // a sibling prefix must not leak in
	for _, limit := range []int64{1, 7, 10, 11, 500, 999, 1000, 1001, 5000} {
		want, wantRemaining := pageThrough(t, s, "g/r", storage.ListOptions{Limit: limit})
		if len(want) != n || !slices.IsSorted(want) {
			t.Fatalf("limit %d: counted pages hold %d keys", limit, len(want))
		}
		got, remaining := pageThrough(t, s, "g/r", storage.ListOptions{Limit: limit, Uncounted: true})
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: uncounted pages hold %d keys, counted %d", limit, len(got), len(want))
		}
		for i, r := range remaining {
			last := i == len(remaining)-1
			if last && (r != 0 || wantRemaining[i] != 0) || !last && r != -1 {
				t.Fatalf("limit %d: page %d of %d says %d remain (counted: %d)", limit, i, len(remaining), r, wantRemaining[i])
			}
		}
	}
	// A page at a revision does not see what was written after it.
	first, err := s.List(t.Context(), "g/r", storage.ListOptions{Limit: 10, Uncounted: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(t.Context(), "g/r/0000000a", []byte("late")); err != nil {
		t.Fatal(err)
	}
	again, err := s.List(t.Context(), "g/r", storage.ListOptions{Limit: 20, Uncounted: true, Revision: first.Revision})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range again.Items {
		if kv.Key == "g/r/0000000a" {
			t.Fatalf("a page at %d holds a key written after it", first.Revision)
		}
	}
	// Cut streams end: etcd has finished every range stream it started.
	deadline := time.Now().Add(10 * time.Second)
	for open := rangeStreamsOpen(t); open != 0; open = rangeStreamsOpen(t) {
		if time.Now().After(deadline) {
			t.Fatalf("%v range streams still open in etcd", open)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rangeStreamsOpen is how many range streams the etcd servers of this process have
// started and not finished (their gRPC metrics).
func rangeStreamsOpen(t *testing.T) float64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var open float64
	for _, mf := range mfs {
		sign := map[string]float64{"grpc_server_started_total": 1, "grpc_server_handled_total": -1}[mf.GetName()]
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "grpc_method" && l.GetValue() == "RangeStream" {
					open += sign * m.GetCounter().GetValue()
				}
			}
		}
	}
	return open
}

func TestUncountedPageAtACompactedRevision(t *testing.T) {
	cli := etcdtest.Start(t)
	s := storage.New(cli, "/test")
	seedKeys(t, cli, "c/r", 30)
	page, err := s.List(t.Context(), "c/r", storage.ListOptions{Limit: 5, Uncounted: true})
	if err != nil {
		t.Fatal(err)
	}
	seedKeys(t, cli, "c/r", 30)
	if _, err := cli.Compact(t.Context(), page.Revision+1); err != nil {
		t.Fatal(err)
	}
	_, err = s.List(t.Context(), "c/r", storage.ListOptions{Limit: 5, Uncounted: true, Revision: page.Revision})
	if !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("a page at a compacted revision: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.List(ctx, "c/r", storage.ListOptions{Limit: 5, Uncounted: true}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a page read with a cancelled context: %v", err)
	}
}

var pageKeys = flag.Int("storage.page-keys", 100000, "how many keys of 1 KiB BenchmarkPages pages through")

// BenchmarkPages reads every key of a prefix of -storage.page-keys keys of 1 KiB in
// pages of 500, counted (a range with a limit: etcd counts every key after the page)
// and uncounted (a range stream cut after the page).
func BenchmarkPages(b *testing.B) {
	cli := etcdtest.Start(b)
	s := storage.New(cli, "/test")
	n := *pageKeys
	for i := 0; i < n; i += 100 {
		var ops []clientv3.Op
		for j := i; j < min(i+100, n); j++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/test/b/r/%07d", j), string(make([]byte, 1024))))
		}
		if _, err := cli.Txn(b.Context()).Then(ops...).Commit(); err != nil {
			b.Fatal(err)
		}
	}
	for _, uncounted := range []bool{false, true} {
		b.Run(fmt.Sprintf("uncounted=%v", uncounted), func(b *testing.B) {
			for b.Loop() {
				opts := storage.ListOptions{Limit: 500, Uncounted: uncounted}
				read := 0
				for {
					page, err := s.List(b.Context(), "b/r", opts)
					if err != nil {
						b.Fatal(err)
					}
					read += len(page.Items)
					if !page.More {
						break
					}
					opts.Revision, opts.Start = page.Revision, page.Items[len(page.Items)-1].Key+"\x00"
				}
				if read != n {
					b.Fatalf("read %d keys", read)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n/500), "µs/page")
		})
	}
}

// rangeOnly is an etcd KV service before range streams (etcd 3.6 and older): it
// forwards ranges to a real etcd and answers every other call Unimplemented.
type rangeOnly struct {
	pb.UnimplementedKVServer
	kv pb.KVClient
}

func (r rangeOnly) Range(ctx context.Context, req *pb.RangeRequest) (*pb.RangeResponse, error) {
	return r.kv.Range(ctx, req)
}

// An etcd without range streams answers uncounted pages as counted ones.
func TestUncountedPagesFromAnEtcdWithoutRangeStreams(t *testing.T) {
	cli := etcdtest.Start(t)
	seedKeys(t, cli, "o/r", 25)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pb.RegisterKVServer(srv, rangeOnly{kv: pb.NewKVClient(cli.ActiveConnection())})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	old, err := clientv3.New(clientv3.Config{Endpoints: []string{ln.Addr().String()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Close() })
	s := storage.New(old, "/test")
	for range 2 { // the second after the store has learnt that etcd has none
		keys, remaining := pageThrough(t, s, "o/r", storage.ListOptions{Limit: 10, Uncounted: true})
		if len(keys) != 25 || !slices.Equal(remaining, []int64{15, 5, 0}) {
			t.Fatalf("pages of %d keys, remaining %v; want 25 keys, remaining [15 5 0] (counted)", len(keys), remaining)
		}
	}
}
