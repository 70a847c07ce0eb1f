package integration

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/etcd"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/test/tcpgate"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A server stays with the etcd cluster it started on. Cut off from it, its endpoint
// then leads to a member of another cluster (a port reused; on a machine running two
// suites, another test's etcd): the server neither writes there nor counts as ready,
// and nothing of it reaches that cluster. When its own cluster answers at the
// endpoint again, it serves writes again.
func TestServerStaysWithItsEtcdCluster(t *testing.T) {
	t.Parallel()
	other, err := etcd.StartLoopback(t.Context(), filepath.Join(t.TempDir(), "other"), etcd.WithUnsafeNoFsync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	otherClient, err := other.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = otherClient.Close() })
	var gate *tcpgate.Gate
	c := harness.Start(t, 1, harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		gate = tcpgate.New(t, o.Etcd.Endpoints...)
		o.Etcd.Endpoints = []string{gate.URL()}
	}))
	s := c.Servers[0]
	configMaps := s.Clientset(t).CoreV1().ConfigMaps("default")
	create := func(name string, timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		_, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}

	gate.Cut()
	gate.Retarget(t, other.Endpoints()...)
	gate.Heal()
	waitFor(t, "the server to reach the other cluster's member", func() (bool, error) {
		return gate.Joined(other.Endpoints()[0]) > 0, nil
	})
	if err := create("during", 3*time.Second); err == nil {
		t.Fatal("a write succeeded while the server's etcd endpoint led to another cluster")
	}
	for _, path := range []string{"/readyz", "/livez"} {
		if code, body := get(t, s.Config(), path+"?verbose"); code == http.StatusOK || !strings.Contains(body, "[-]etcd failed") {
			t.Errorf("%s answered %d while the server's etcd endpoint led to another cluster:\n%s", path, code, body)
		}
	}
	resp, err := otherClient.Get(t.Context(), "/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		t.Errorf("the other cluster holds %s", kv.Key)
	}

	gate.Cut()
	gate.Retarget(t, c.Etcd.Endpoints()...)
	gate.Heal()
	waitFor(t, "a write through the server once its own cluster answers again", func() (bool, error) {
		err := create("after", 5*time.Second) // an attempt the client gave up on may have been written
		return err == nil || apierrors.IsAlreadyExists(err), nil
	})
}
