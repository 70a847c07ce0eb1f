package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

// clusterPin keeps a client on the etcd cluster it first reached.
//
// An endpoint is a host and a port, and what answers there can change while a client
// lives: a member replaced by one of another cluster, an endpoint reused by mistake,
// or, on a machine running tests side by side, another test's etcd on a port a
// stopped one left. Reconnecting silently would have a server read another cluster's
// objects and write its own (its lease, its StorageVersion entries) into it. So every
// connection the client opens, at start and on each reconnect, is preceded by a
// Status call on a connection of its own, and a member of another cluster is refused
// before any request reaches it: to the client the endpoint is down, and gRPC tries
// it again with its back-off.
//
// The first cluster that answers is the one kept, for the life of the client; a
// process started again takes the cluster its endpoints lead to then. (A cluster's ID
// derives from its members' peer URLs and its token: one bootstrapped again, or
// restored, with the same flags has the same ID and is accepted.)
//
// The check's connection, like the client's own (which this dialer makes), does not
// go through an HTTPS proxy from the environment.
type clusterPin struct {
	creds  credentials.TransportCredentials
	logger klog.Logger
	id     atomic.Uint64 // 0 until a member answered

	mu      sync.Mutex
	refused map[string]uint64 // address: the other cluster last refused there (logged once)
}

// errNoAnswer is wrapped when the member at an address did not say which cluster it
// belongs to: the endpoint is down, as far as the client is concerned.
var errNoAnswer = errors.New("no answer from an etcd member")

// newClusterPin returns the pin of a client of https (or else http) endpoints; tlsCfg
// nil means the system roots and no client certificate, as for the client itself.
func newClusterPin(https bool, tlsCfg *tls.Config, logger klog.Logger) *clusterPin {
	creds := insecure.NewCredentials()
	if https {
		if tlsCfg == nil {
			tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		creds = credentials.NewTLS(tlsCfg.Clone())
	}
	return &clusterPin{creds: creds, logger: logger, refused: map[string]uint64{}}
}

// dial is the client's dialer: a TCP connection to addr once the member there proved
// to be of the pinned cluster. The proof and the connection are two dials a few
// microseconds apart; a port changing hands between them is not guarded against.
func (p *clusterPin) dial(ctx context.Context, addr string) (net.Conn, error) {
	if err := p.check(ctx, addr); err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// check asks the member at addr for its cluster ID, pins the client to it if none is
// pinned yet, and refuses it with ErrOtherCluster if another is.
func (p *clusterPin) check(ctx context.Context, addr string) error {
	id, err := clusterAt(ctx, addr, p.creds)
	if err != nil {
		return err
	}
	if p.id.CompareAndSwap(0, id) {
		return nil
	}
	want := p.id.Load()
	if id == want {
		p.mu.Lock()
		delete(p.refused, addr) // another incident there is logged again
		p.mu.Unlock()
		return nil
	}
	err = fmt.Errorf("%w: the member at %s is of cluster %x, not of cluster %x this client first reached",
		ErrOtherCluster, addr, id, want)
	p.mu.Lock()
	first := p.refused[addr] != id
	p.refused[addr] = id
	p.mu.Unlock()
	if first {
		p.logger.Error(err, "Refusing an etcd member of another cluster; retrying the endpoint until its own cluster answers there",
			"endpoint", addr)
	}
	return err
}

// clusterAt returns the ID of the cluster the member at addr belongs to, from its
// answer to a Status call (answered by the member alone, with or without a leader).
//
// A failed call's error is returned as text, not wrapped: gRPC takes a dial error
// that wraps a status for the RPC's own final status, so the client's RPCs would fail
// at once with it instead of waiting, as they do, for the connection to come back.
func clusterAt(ctx context.Context, addr string, creds credentials.TransportCredentials) (uint64, error) {
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds), grpc.WithNoProxy())
	if err != nil {
		return 0, fmt.Errorf("asking %s for its etcd cluster: %w", addr, err)
	}
	defer func() { _ = conn.Close() }()
	resp, err := pb.NewMaintenanceClient(conn).Status(ctx, &pb.StatusRequest{})
	if err != nil {
		return 0, fmt.Errorf("%w: asking %s for its etcd cluster: %s", errNoAnswer, addr, status.Convert(err).Message())
	}
	id := resp.GetHeader().GetClusterId()
	if id == 0 {
		return 0, fmt.Errorf("%w: %s answered without a cluster ID", errNoAnswer, addr)
	}
	return id, nil
}
