// Package etcdtest starts real etcd members for tests, the way net/http/httptest
// starts real HTTP servers: one call gives a single-member etcd on free loopback ports
// with its data in the test's temporary directory (fsync off), and a client for it;
// both are closed when the test ends.
//
//	cli := etcdtest.Start(t)
//	st := storage.New(cli, "/registry")
//
// Packages whose tests need more than a client (several members, restarts) use
// package etcd directly.
package etcdtest

import (
	"path/filepath"
	"testing"

	"github.com/concordproject/concord/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Start starts a single-member etcd for t and returns a client of it. It fails the
// test if etcd does not start; t.Cleanup closes both.
func Start(t testing.TB) *clientv3.Client {
	t.Helper()
	m, err := etcd.StartLoopback(t.Context(), filepath.Join(t.TempDir(), "etcd"), etcd.WithUnsafeNoFsync())
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	t.Cleanup(m.Close)
	cli, err := m.NewClient(t.Context())
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}
