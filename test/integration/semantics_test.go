package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

func deleteCollection(t *testing.T, c *harness.Cluster, ns string) {
	ctx := t.Context()
	cms := c.Servers[0].Clientset(t).CoreV1().ConfigMaps(ns)
	for i := 0; i < 6; i++ {
		cm := configMap(fmt.Sprint("dc-", i), nil)
		cm.Labels = map[string]string{"batch": fmt.Sprint(i % 2)}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "batch=1"}); err != nil {
		t.Fatal(err)
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 {
		t.Fatalf("%d left, want the 3 of batch 0", len(list.Items))
	}
	for _, it := range list.Items {
		if it.Labels["batch"] != "0" {
			t.Fatalf("%s of batch 1 survived", it.Name)
		}
	}
}

// A continue token whose snapshot was compacted is 410 Expired, and the Status carries
// a token that goes on at the current state.
func TestExpiredContinueToken(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	cms := c.Servers[0].Clientset(t).CoreV1().ConfigMaps("default")
	for i := 0; i < 4; i++ {
		if _, err := cms.Create(ctx, configMap(fmt.Sprint("x-", i), nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := cms.List(ctx, metav1.ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Create(ctx, configMap("x-9", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cur, err := c.EtcdClient.Get(ctx, "/x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EtcdClient.Compact(ctx, cur.Header.Revision); err != nil {
		t.Fatal(err)
	}
	// The watch cache may serve the page from its snapshot until it learns of the
	// compaction, which it does asynchronously.
	var st apierrors.APIStatus
	waitFor(t, "continue after compaction to be 410 Expired with a fresh token", func() (bool, error) {
		_, err := cms.List(ctx, metav1.ListOptions{Limit: 2, Continue: page.Continue})
		if err != nil && !apierrors.IsResourceExpired(err) {
			return false, err
		}
		return err != nil && errorsAs(err, &st) && st.Status().Continue != "", nil
	})
	rest, err := cms.List(ctx, metav1.ListOptions{Continue: st.Status().Continue})
	if err != nil {
		t.Fatalf("continuing with the fresh token: %v", err)
	}
	if len(rest.Items) != 3 { // x-2, x-3 and the newer x-9
		t.Fatalf("fresh token read %d items, want 3", len(rest.Items))
	}
}

func TestWatchTimeoutAndBookmarks(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		o.Store.BookmarkInterval = 200 * time.Millisecond
	}))
	ctx := t.Context()
	cms := c.Servers[0].Clientset(t).CoreV1().ConfigMaps("default")
	start := time.Now()
	w, err := cms.Watch(ctx, metav1.ListOptions{TimeoutSeconds: ptr.To[int64](1), ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	for range w.ResultChan() {
	}
	// A timeout never ends a watch early; how late it ends is the machine's business
	// (bounded only so that a watch that never ends fails here, not at go test's deadline).
	if d := time.Since(start); d < 900*time.Millisecond || d > 30*time.Second {
		t.Fatalf("a 1s watch lasted %v", d)
	}
	created, err := cms.Create(ctx, configMap("bm", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err = cms.Watch(ctx, metav1.ListOptions{AllowWatchBookmarks: true, ResourceVersion: created.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Bookmark {
				if rv := ev.Object.(*corev1.ConfigMap).ResourceVersion; rvNumber(t, rv) < rvNumber(t, created.ResourceVersion) {
					t.Fatalf("bookmark at %s, older than the watch start %s", rv, created.ResourceVersion)
				}
				return
			}
		case <-deadline:
			t.Fatal("no bookmark on an idle watch within 10s")
		}
	}
}

// generation moves only when something outside metadata changes; ownerReferences
// are kept as given.
func generationAndOwnerReferences(t *testing.T, c *harness.Cluster, ns string) {
	ctx := t.Context()
	cs := c.Servers[0].Clientset(t)
	owner, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap("owner", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A PodTemplate has a generation, as kube's strategy gives it (a ConfigMap has none).
	pts := cs.CoreV1().PodTemplates(ns)
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "owned"}, Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "one"}}}}}
	pt.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID, Controller: ptr.To(true)}}
	got, err := pts.Create(ctx, pt, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != 1 || len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != owner.UID {
		t.Fatalf("created: generation %d, owners %+v", got.Generation, got.OwnerReferences)
	}
	got.Labels = map[string]string{"only": "metadata"}
	got, err = pts.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != 1 {
		t.Fatalf("a metadata change bumped generation to %d", got.Generation)
	}
	got.Template.Spec.Containers[0].Image = "two"
	got, err = pts.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != 2 {
		t.Fatalf("a template change left generation at %d", got.Generation)
	}
}
