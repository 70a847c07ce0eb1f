package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event within 10s")
	}
	return watch.Event{}
}

func TestWatchEventsAcrossServers(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	ctx := t.Context()
	writer := c.Servers[0].Clientset(t).CoreV1().ConfigMaps("default")
	watcher := c.Servers[1].Clientset(t).CoreV1().ConfigMaps("default")

	first, err := writer.Create(ctx, configMap("before", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watcher.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion, LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	cm := configMap("web", map[string]string{"v": "1"})
	cm.Labels = map[string]string{"app": "web"}
	if _, err := writer.Create(ctx, configMap("other", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created, err := writer.Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != "web" {
		t.Fatalf("first event %s %v, want ADDED web (the unlabelled one is filtered)", ev.Type, ev.Object)
	}
	created.Data["v"] = "2"
	if _, err := writer.Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Modified || ev.Object.(*corev1.ConfigMap).Data["v"] != "2" {
		t.Fatalf("second event %s, want MODIFIED with v=2", ev.Type)
	}
	// Losing the label means leaving the selection: DELETED for this watcher.
	latest, _ := writer.Get(ctx, "web", metav1.GetOptions{})
	latest.Labels = nil
	if _, err := writer.Update(ctx, latest, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Deleted {
		t.Fatalf("third event %s, want DELETED (label removed)", ev.Type)
	}
}

func TestWatchFromCompactedRevisionIsExpired(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	ctx := t.Context()
	cms := c.Servers[0].Clientset(t).CoreV1().ConfigMaps("default")
	old, err := cms.Create(ctx, configMap("a", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := cms.Create(ctx, configMap(fmt.Sprint("b", i), nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rev, err := c.EtcdClient.Get(ctx, "/x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.EtcdClient.Compact(ctx, rev.Header.Revision); err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: old.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev := nextEvent(t, w)
	st, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
		t.Fatalf("watch from a compacted revision: %s %+v, want ERROR 410 Expired", ev.Type, ev.Object)
	}

	// A paged list pinned to the compacted snapshot expires too, with a token to go on.
	_, err = cms.List(ctx, metav1.ListOptions{ResourceVersion: old.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err == nil {
		t.Fatal("exact list at a compacted revision succeeded")
	}
}

// Informers sync against the server both with WatchList (sendInitialEvents, the
// client-go default from 1.35) and with the classic list+watch.
func TestInformersSync(t *testing.T) {
	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("WatchListClient=%v", watchList), func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			c := harness.Start(t, 2)
			ctx := t.Context()
			writer := c.Servers[0].Clientset(t).CoordinationV1().Leases("default")
			for i := 0; i < 5; i++ {
				l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("pre-", i)}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("x")}}
				if _, err := writer.Create(ctx, l, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			factory := informers.NewSharedInformerFactoryWithOptions(c.Servers[1].Clientset(t), 0, informers.WithNamespace("default"))
			inf := factory.Coordination().V1().Leases().Informer()
			factory.Start(ctx.Done())
			syncCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
				t.Fatal("informer did not sync within 15s")
			}
			if n := len(inf.GetStore().List()); n != 5 {
				t.Fatalf("informer has %d leases after sync, want 5", n)
			}
			if _, err := writer.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "post"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the informer to see the new lease", func() (bool, error) {
				_, ok, err := inf.GetStore().GetByKey("default/post")
				return ok, err
			})
		})
	}
}

// A server paces the flushes of a busy watch (--watch-flush-interval): the events of
// changes that come close together go out a few at a time. Every watcher still gets
// every change, in order, the last of a burst included though nothing comes after it;
// a server that flushes every change at once sends the same events.
func TestWatchFlushPacing(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, harness.WithServerOptions(func(i int, o *controlplane.Options) {
		o.Store.WatchFlushInterval = []time.Duration{100 * time.Millisecond, 0}[i]
	}))
	ctx := t.Context()
	cms := c.Servers[0].Clientset(t).CoreV1().ConfigMaps("default")
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pb := c.Servers[0].Config()
	pb.AcceptContentTypes, pb.ContentType = "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf"
	watchers := map[string]corev1client.ConfigMapInterface{
		"paced, JSON":          cms,
		"paced, protobuf":      kubernetes.NewForConfigOrDie(pb).CoreV1().ConfigMaps("default"),
		"flushed every change": c.Servers[1].Clientset(t).CoreV1().ConfigMaps("default"),
	}
	ws := map[string]watch.Interface{}
	for name, client := range watchers {
		w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		ws[name] = w
	}
	const writers, each = 5, 10
	var g errgroup.Group
	for i := range writers {
		g.Go(func() error {
			for j := range each {
				if _, err := cms.Create(ctx, configMap(fmt.Sprintf("paced-%d-%d", i, j), nil), metav1.CreateOptions{}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for name, w := range ws {
		var got []string
		last := int64(0)
		for range writers * each {
			ev := nextEvent(t, w)
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok || ev.Type != watch.Added {
				t.Fatalf("%s: event %s %T, want ADDED ConfigMap", name, ev.Type, ev.Object)
			}
			rv, err := strconv.ParseInt(cm.ResourceVersion, 10, 64)
			if err != nil || rv <= last {
				t.Fatalf("%s: resourceVersion %q after %d, want a greater number", name, cm.ResourceVersion, last)
			}
			last = rv
			got = append(got, cm.Name+"@"+cm.ResourceVersion)
		}
		if want == nil {
			want = got
		} else if !slices.Equal(got, want) {
			t.Fatalf("%s got events\n%v\nanother watcher got\n%v", name, got, want)
		}
	}
}
