package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/concordproject/concord/retry"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/wait"
)

// A watchStream is one gRPC Watch stream of etcd's, carrying one watch.
//
// It is etcd's Watch service spoken directly, not clientv3's Watcher: clientv3 reads
// every response etcd sends as soon as it arrives and buffers it, without bound, until
// the watch's channel is read, so a reader slower than etcd's writes (a million
// objects written at etcd's pace, a collector catching up) held its backlog in this
// process, hundreds of megabytes of it. Here one goroutine receives a response and
// waits until the watch takes it before it receives the next: besides the response
// being handed on and the one received, what etcd sent and nobody read waits in
// gRPC's flow-control window (up to 16 MiB per stream, as gRPC's estimate of the
// connection grows it), then in etcd, which keeps a watcher that does not keep up as
// a slow one and sends it the rest from its history once it reads again.
type watchStream struct {
	stream pb.Watch_WatchClient
	cancel context.CancelFunc
	recv   <-chan received
	done   chan struct{} // closed once the receiving goroutine has returned
}

type received struct {
	resp *pb.WatchResponse
	err  error
}

// resumeWatch is the policy of opening a watch's stream again when etcd breaks it
// before it has delivered anything new (restarting, without a leader): for about a
// minute. A dial waits for the connection meanwhile (gRPC's wait for ready), however
// long etcd cannot be reached.
var resumeWatch = retry.Policy{
	Backoff:   wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 16, Cap: 5 * time.Second},
	Retriable: func(err error) bool { var b *brokenStreamError; return errors.As(err, &b) },
}

// dial opens one stream, asks for the watch, and waits for etcd's first response.
func (w *watch) dial(ctx context.Context) (*watchStream, *pb.WatchResponse, error) {
	// etcd ends the streams of a member that has lost its leader, rather than let
	// them wait for changes that cannot come.
	sctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	stream, err := pb.NewWatchClient(w.s.client.ActiveConnection()).Watch(sctx,
		grpc.WaitForReady(true), grpc.MaxCallRecvMsgSize(math.MaxInt32))
	if err != nil {
		cancel()
		return nil, nil, watchStreamError(err)
	}
	create := &pb.WatchCreateRequest{
		Key:            []byte(w.key),
		RangeEnd:       []byte(clientv3.GetPrefixRangeEnd(w.key)),
		StartRevision:  w.last,
		PrevKv:         !w.opts.WithoutPrevious,
		ProgressNotify: w.opts.ProgressInterval > 0,
		// A watch that catches up gets up to a thousand revisions in one response
		// (a hundred megabytes and more), which gRPC receives whole before any of it
		// is handed on; in fragments of at most etcd's request size, it receives
		// that much at a time.
		Fragment: true,
	}
	if err := stream.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{CreateRequest: create}}); err != nil {
		cancel()
		return nil, nil, watchStreamError(err)
	}
	recv := make(chan received)
	ws := &watchStream{stream: stream, cancel: cancel, recv: recv, done: make(chan struct{})}
	go ws.receive(sctx, recv)
	select {
	case r := <-recv:
		if r.err != nil {
			ws.close()
			return nil, nil, watchStreamError(r.err)
		}
		return ws, r.resp, nil
	case <-ctx.Done():
		ws.close()
		return nil, nil, ctx.Err()
	}
}

// receive receives one response at a time and waits until it is taken, until the
// stream fails or ends.
func (ws *watchStream) receive(ctx context.Context, out chan<- received) {
	defer close(ws.done)
	for {
		resp, err := ws.stream.Recv()
		select {
		case out <- received{resp, err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// requestProgress asks etcd where the stream stands. A request that cannot be sent
// means the stream is broken: its receiver reports that.
func (ws *watchStream) requestProgress() {
	_ = ws.stream.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_ProgressRequest{ProgressRequest: &pb.WatchProgressRequest{}}})
}

// close ends the stream and waits for its receiver.
func (ws *watchStream) close() {
	ws.cancel()
	<-ws.done
}

// A brokenStreamError is a stream that failed for a reason a new stream may not
// meet: etcd unavailable, restarting, without a leader, the connection lost.
type brokenStreamError struct{ err error }

func (e *brokenStreamError) Error() string { return "etcd watch stream broke: " + e.err.Error() }
func (e *brokenStreamError) Unwrap() error { return e.err }

// A compactedError is etcd refusing a watch from a revision it has compacted.
type compactedError struct{ oldest int64 }

func (e *compactedError) Error() string {
	return fmt.Sprintf("%v: oldest available revision is %d", ErrCompacted, e.oldest)
}
func (e *compactedError) Unwrap() error { return ErrCompacted }

// watchStreamError classifies what a stream's call failed with: as clientv3's watcher
// does, Unavailable and Internal (and an end of stream etcd did not announce) are
// worth a new stream; anything else ends the watch.
func watchStreamError(err error) error {
	if errors.Is(err, io.EOF) {
		return &brokenStreamError{err: err}
	}
	if st, ok := status.FromError(err); ok && (st.Code() == codes.Unavailable || st.Code() == codes.Internal) {
		return &brokenStreamError{err: err}
	}
	return translate(err)
}
