package integration

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

// A server with its embedded etcd stops in the reverse order of its start: when Wait
// returns, its identity is withdrawn (lease deleted, no StorageVersion entry left)
// through etcd while etcd still ran, and etcd itself is closed (its data directory
// opens again).
func TestShutdownOrder(t *testing.T) {
	o := controlplane.NewOptions()
	o.DataDir = t.TempDir()
	o.Serving.SecurePort = 0
	o.Etcd.UnsafeNoFsync = true
	ctx, cancel := context.WithCancel(klog.NewContext(context.WithoutCancel(t.Context()), ktesting.NewLogger(t, ktesting.NewConfig())))
	inst, err := controlplane.Start(ctx, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(inst.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case <-inst.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("the server did not stop")
	}
	if err := inst.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	if left := concordGoroutines(); len(left) > 0 {
		t.Errorf("%d goroutines of the server still run after Wait:\n%s", len(left), strings.Join(left, "\n\n"))
	}

	m, err := etcd.StartLoopback(t.Context(), filepath.Join(o.DataDir, "etcd"), etcd.WithUnsafeNoFsync())
	if err != nil {
		t.Fatalf("the server's etcd is still open: %v", err)
	}
	t.Cleanup(m.Close)
	cli, err := m.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	get := func(key string) int64 {
		resp, err := cli.Get(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Count
	}
	if get("/registry/core/configmaps/default/before") != 1 {
		t.Error("the configmap written before the stop is not in etcd")
	}
	if n := get("/registry/coordination.k8s.io/leases/kube-system/" + inst.ServerID); n != 0 {
		t.Error("the identity lease was not deleted before etcd closed")
	}
	resp, err := cli.Get(t.Context(), "/registry/internal.apiserver.k8s.io/storageversions/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		t.Errorf("StorageVersion left: the entries were not withdrawn before etcd closed: %s (created at revision %d, modified at %d): %s",
			kv.Key, kv.CreateRevision, kv.ModRevision, kv.Value)
	}
}

// concordGoroutines returns the stacks of the goroutines running Concord code, but
// this test's.
func concordGoroutines() []string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		// A goroutine caught in runtime.goexit1 has returned and is being torn down.
		if strings.Contains(g, "github.com/concordproject/concord/") && !strings.Contains(g, "concord/test/integration.") &&
			!strings.Contains(g, "runtime.goexit1(") {
			out = append(out, g)
		}
	}
	return out
}
