package integration

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/storage"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestEtcdCompaction: two servers sharing an etcd compact its history every interval,
// taking turns through kube's compact_rev_key: a write's old revision goes, a list at
// it is then answered 410 Expired as kube-apiserver answers, and the servers go on
// serving.
func TestEtcdCompaction(t *testing.T) {
	const interval = 300 * time.Millisecond
	c := harness.Start(t, 2, harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		o.Etcd.CompactionInterval = interval
	}))
	ctx := t.Context()
	cms := c.Servers[0].Clientset(t).CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "history"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := cm.ResourceVersion
	cm.Data["v"] = "2"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The history of the last interval is kept, so the old revision goes within two.
	exact := metav1.ListOptions{ResourceVersion: old, ResourceVersionMatch: metav1.ResourceVersionMatchExact}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.Servers[1].Clientset(t).CoreV1().ConfigMaps("default").List(ctx, exact)
		return apierrors.IsResourceExpired(err), nil
	})
	if err != nil {
		t.Fatalf("a list at revision %s was not answered 410 Expired once compacted: %v", old, err)
	}

	// The servers took turns through the key.
	resp, err := c.EtcdClient.Get(ctx, storage.CompactionKey)
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Version < 2 {
		t.Fatalf("%s: %+v %v, want a key advanced at least twice", storage.CompactionKey, resp, err)
	}
	compacted := 0
	for _, s := range c.Servers {
		body, err := s.Clientset(t).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(line, "concord_etcd_compacted_revision "); ok {
				if n, _ := strconv.ParseFloat(v, 64); n > 0 {
					compacted++
				}
			}
		}
	}
	if compacted == 0 {
		t.Error("no server reports concord_etcd_compacted_revision above 0")
	}

	// Reads and writes go on: the current state is untouched.
	got, err := c.Servers[1].Clientset(t).CoreV1().ConfigMaps("default").Get(ctx, "history", metav1.GetOptions{})
	if err != nil || got.Data["v"] != "2" {
		t.Fatalf("after compaction: %+v %v", got, err)
	}
}
