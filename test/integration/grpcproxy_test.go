package integration

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/proxy/grpcproxy"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A server whose etcd is behind etcd's gRPC proxy, which serves no range streams (as
// etcd before 3.7): the pages that are read uncounted where etcd streams ranges (a
// watch cache's load, the garbage collector's starting state, a rewrite's later
// pages) are read as counted pages, and each of those reads still answers.
func TestServerBehindEtcdGRPCProxy(t *testing.T) {
	t.Parallel()
	var proxy string
	c := harness.Start(t, 0, harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		o.Etcd.Endpoints = []string{proxy}
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	srv := grpc.NewServer()
	kv, _ := grpcproxy.NewKvProxy(c.EtcdClient)
	watch, _ := grpcproxy.NewWatchProxy(ctx, zap.NewNop(), c.EtcdClient)
	lease, _ := grpcproxy.NewLeaseProxy(ctx, c.EtcdClient)
	pb.RegisterKVServer(srv, kv)
	pb.RegisterWatchServer(srv, watch)
	pb.RegisterLeaseServer(srv, lease)
	pb.RegisterMaintenanceServer(srv, grpcproxy.NewMaintenanceProxy(c.EtcdClient))
	pb.RegisterAuthServer(srv, grpcproxy.NewAuthProxy(c.EtcdClient))
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { // after the server's own cleanup, registered later
		cancel()
		srv.Stop()
	})
	proxy = "http://" + ln.Addr().String()
	s := c.AddServer(t)

	cms := s.Clientset(t).CoreV1().ConfigMaps("default")
	const n = 30
	for i := range n {
		if _, err := cms.Create(t.Context(), configMap(fmt.Sprint("proxied-", i), nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Lists, answered by the configmaps' watch cache once it has loaded.
	for range 3 {
		list, err := cms.List(t.Context(), metav1.ListOptions{})
		if err != nil || len(list.Items) != n {
			t.Fatalf("list: %v items, %v; want %d", len(list.Items), err, n)
		}
	}
	// A rewrite in pages of 4.
	scanned, token := 0, ""
	for {
		code, r := rewrite(t, s.Config(), "/concord/v1/rewrite/core/configmaps?limit=4&continue="+token)
		if code != 200 {
			t.Fatalf("rewrite: %d", code)
		}
		scanned += r.Scanned
		if token = r.Continue; token == "" {
			break
		}
	}
	system, err := s.Clientset(t).CoreV1().ConfigMaps(metav1.NamespaceSystem).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := n + len(system.Items); scanned != want {
		t.Fatalf("the rewrite scanned %d, want %d", scanned, want)
	}
	// The garbage collector follows the configmaps: a dependent goes with its owner.
	owner, err := cms.Get(t.Context(), "proxied-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dependent := configMap("proxied-dependent", nil)
	dependent.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}}
	if _, err := cms.Create(t.Context(), dependent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(t.Context(), owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the dependent collected", func() error {
		_, err := cms.Get(t.Context(), dependent.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("the dependent: %w", err)
	})
}
