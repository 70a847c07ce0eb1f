package storage_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/storage"
	"github.com/prometheus/client_golang/prometheus"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// slowWatchers reads etcd's count of watchers it holds back because they do not take
// what it sends (the embedded etcd's metrics are in this process's registry).
func slowWatchers(t *testing.T) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "etcd_debugging_mvcc_slow_watcher_total" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("etcd reports no slow_watcher_total")
	return 0
}

// nextEvent returns the watch's next change (progress notifications skipped).
func nextEvent(t *testing.T, events <-chan storage.Event) storage.Event {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the watch ended")
			}
			if ev.Type != storage.Progress {
				return ev
			}
		case <-deadline:
			t.Fatal("no event within 30s")
		}
	}
}

// A watch whose reader takes nothing reads no more from etcd than gRPC's window:
// etcd holds the rest back (it counts the watcher as slow), and the reader, once it
// reads, gets every change in order. A watch through clientv3's Watcher buffered
// every change in the reader's process instead, and etcd never saw a slow watcher.
func TestWatchLeavesWhatItsReaderHasNotTakenInEtcd(t *testing.T) {
	ctx := t.Context()
	cli := etcdtest.Start(t)
	s := storage.New(cli, "/test")
	base, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slowBefore := slowWatchers(t)
	events := s.Watch(ctx, "slow/r", base, storage.WatchOptions{WithoutPrevious: true})
	// 64 MiB of changes: more than gRPC's flow-control windows (at most 16 MiB) and
	// etcd's send queue (128 responses) hold.
	const n, size = 1024, 64 << 10
	value := strings.Repeat("x", size)
	for i := range n {
		if _, err := cli.Put(ctx, fmt.Sprintf("/test/slow/r/%04d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for slowWatchers(t) <= slowBefore {
		if time.Now().After(deadline) {
			t.Fatal("etcd never held the watch back: its changes were read into this process")
		}
		// Waiting on etcd's notice, which its next write to the watcher makes.
		if _, err := cli.Put(ctx, "/test/slow/other", "nudge"); err != nil {
			t.Fatal(err)
		}
	}
	last := base
	for i := range n {
		ev := nextEvent(t, events)
		want := fmt.Sprintf("slow/r/%04d", i)
		if ev.Type != storage.Put || ev.KV.Key != want || len(ev.KV.Value) != size || ev.Revision <= last {
			t.Fatalf("event %d: %v %s at %d (after %d), want a put of %s", i, ev.Type, ev.KV.Key, ev.Revision, last, want)
		}
		last = ev.Revision
	}
}

// cuttable is etcd's Watch service passed through to a real etcd, whose streams the
// test can break as a restarting or unreachable etcd would.
type cuttable struct {
	pb.UnimplementedWatchServer
	upstream pb.WatchClient

	// cutAfterFragment breaks the first stream that has passed on a fragment.
	cutAfterFragment bool

	mu        sync.Mutex
	cut       chan struct{}
	starts    []int64 // the start revision of every watch asked for
	fragments int     // responses passed on that etcd sent in fragments
}

// pass passes resp on, and reports whether the stream is to be cut after it.
func (c *cuttable) pass(srv pb.Watch_WatchServer, resp *pb.WatchResponse) (bool, error) {
	if err := srv.Send(resp); err != nil {
		return false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !resp.Fragment {
		return false, nil
	}
	c.fragments++
	cut := c.cutAfterFragment
	c.cutAfterFragment = false
	return cut, nil
}

func (c *cuttable) Watch(srv pb.Watch_WatchServer) error {
	c.mu.Lock()
	cut := c.cut
	c.mu.Unlock()
	ctx, cancel := context.WithCancel(srv.Context())
	defer cancel()
	up, err := c.upstream.Watch(ctx)
	if err != nil {
		return err
	}
	errs := make(chan error, 2)
	go func() {
		for {
			req, err := srv.Recv()
			if err != nil {
				errs <- err
				return
			}
			if cr := req.GetCreateRequest(); cr != nil {
				c.mu.Lock()
				c.starts = append(c.starts, cr.StartRevision)
				c.mu.Unlock()
			}
			if err := up.Send(req); err != nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		for {
			resp, err := up.Recv()
			cut := false
			if err == nil {
				cut, err = c.pass(srv, resp)
			}
			if cut {
				err = status.Error(codes.Unavailable, "cut by the test after a fragment")
			}
			if err != nil {
				errs <- err
				return
			}
		}
	}()
	select {
	case err := <-errs:
		return err
	case <-cut:
		return status.Error(codes.Unavailable, "cut by the test")
	}
}

// cutAll breaks every stream open now.
func (c *cuttable) cutAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.cut)
	c.cut = make(chan struct{})
}

func (c *cuttable) startRevisions() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.starts...)
}

// startCuttable serves etcd's Watch service of cli through a cuttable, and returns
// it with a client of it.
func startCuttable(t *testing.T, cli *clientv3.Client) (*cuttable, *clientv3.Client) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxy := &cuttable{upstream: pb.NewWatchClient(cli.ActiveConnection()), cut: make(chan struct{})}
	srv := grpc.NewServer()
	pb.RegisterWatchServer(srv, proxy)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	through, err := clientv3.New(clientv3.Config{Endpoints: []string{ln.Addr().String()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = through.Close() })
	return proxy, through
}

// A watch whose stream breaks opens another where it stood: its reader sees every
// change once, in order, and no error.
func TestWatchResumesWhereItsStreamBroke(t *testing.T) {
	ctx := t.Context()
	cli := etcdtest.Start(t)
	proxy, through := startCuttable(t, cli)
	s := storage.New(cli, "/test")
	base, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events := storage.New(through, "/test").Watch(ctx, "cut/r", base, storage.WatchOptions{})
	put := func(i int) int64 {
		rev, err := s.Create(ctx, fmt.Sprintf("cut/r/%02d", i), []byte(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	var written []int64
	read := func(from, to int) {
		for i := from; i < to; i++ {
			ev := nextEvent(t, events)
			if ev.Type != storage.Put || ev.Revision != written[i] || string(ev.KV.Value) != fmt.Sprint(i) {
				t.Fatalf("change %d: %+v, want the put of %d at %d", i, ev, i, written[i])
			}
		}
	}
	for i := range 5 {
		written = append(written, put(i))
	}
	read(0, 5)
	proxy.cutAll()
	// The next writes after the watch has opened its second stream: the revision it
	// asks for is then the last it handed on, whatever the cut let through.
	deadline := time.Now().Add(30 * time.Second)
	for len(proxy.startRevisions()) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the watch never opened a second stream")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i := 5; i < 10; i++ {
		written = append(written, put(i))
	}
	read(5, 10)
	select {
	case ev := <-events:
		t.Fatalf("after the last change: %+v", ev)
	default:
	}
	starts := proxy.startRevisions()
	if len(starts) != 2 || starts[0] != base || starts[1] != written[4] {
		t.Fatalf("watches started at %v, want [%d %d]: the second where the reader stood", starts, base, written[4])
	}
}

// A watch that catches up asks etcd for its responses in fragments of at most etcd's
// request size, and hands on whole revisions only: a transaction etcd split across
// two fragments reaches the reader in one batch, and a stream cut after a fragment
// resumes without losing or repeating a change.
func TestWatchHandsOnWholeRevisionsFromFragments(t *testing.T) {
	ctx := t.Context()
	cli := etcdtest.Start(t)
	proxy, through := startCuttable(t, cli)
	proxy.cutAfterFragment = true
	s := storage.New(cli, "/test")
	base, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// 30 transactions of 20 values of 60 KiB, each just under etcd's request size:
	// one response of 36 MiB to a watch from before them.
	const txns, per = 30, 20
	value := strings.Repeat("f", 60<<10)
	for i := range txns {
		ops := make([]clientv3.Op, 0, per)
		for j := range per {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("/test/frag/r/%02d-%02d", i, j), value))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	events := storage.New(through, "/test").Watch(ctx, "frag/r", base, storage.WatchOptions{WithoutPrevious: true})
	var prev storage.Event
	for i := range txns * per {
		ev := nextEvent(t, events)
		want := fmt.Sprintf("frag/r/%02d-%02d", i/per, i%per)
		if ev.Type != storage.Put || ev.KV.Key != want {
			t.Fatalf("change %d: %v %s, want a put of %s", i, ev.Type, ev.KV.Key, want)
		}
		if i > 0 && prev.BatchEnd && prev.Revision == ev.Revision {
			t.Fatalf("change %d: a batch ended inside revision %d", i, ev.Revision)
		}
		prev = ev
	}
	if !prev.BatchEnd {
		t.Fatal("the last change ends no batch")
	}
	proxy.mu.Lock()
	fragments, starts := proxy.fragments, len(proxy.starts)
	proxy.mu.Unlock()
	if fragments < 2 || starts != 2 {
		t.Fatalf("%d fragments passed on, %d watches opened; want fragments, and a second watch after the cut", fragments, starts)
	}
}
