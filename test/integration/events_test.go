package integration

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/migration/controller"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
)

// Events are one resource served in both groups, core v1 and events.k8s.io/v1, as in
// Kubernetes: stored as core v1 Events, so what is written through either group is
// read, listed, watched and deleted through both, the same object (uid,
// resourceVersion) with the fields of its group. Written and read with client-go's
// typed clients, printed as kubectl prints them (LAST SEEN the newest of the
// timestamps, OBJECT kind/name), and written by client-go's recorders of both APIs,
// repeats included (strategic merge patches).
func TestEvents(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1)
	s := c.Servers[0]
	cs := s.Clientset(t)
	ctx := t.Context()
	now := time.Now().Truncate(time.Second) // what the API keeps of a time
	// kube's printer's columns (Subobject, Source, First Seen, Count and Name are wide).
	wantColumns := []string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"}
	checkTable := func(t *testing.T, path, name string, want map[string]interface{}) {
		t.Helper()
		table := getTable(t, s, path)
		var cols []string
		for _, col := range table.ColumnDefinitions {
			cols = append(cols, col.Name)
		}
		if !slices.Equal(cols, wantColumns) {
			t.Errorf("GET %s as Table: columns %v, want %v", path, cols, wantColumns)
		}
		cells := tableCells(t, table, name)
		for col, w := range want {
			if cells[col] != w {
				t.Errorf("GET %s as Table, row %s: %s = %#v, want %#v", path, name, col, cells[col], w)
			}
		}
	}

	// Written before the subtests, which read them.
	old := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "cm1.legacy"},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "cm1", FieldPath: "data"},
		Reason:         "Tested",
		Message:        "  the message  ",
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "events-test", Host: "node-1"},
		FirstTimestamp: metav1.NewTime(now.Add(-time.Hour)),
		LastTimestamp:  metav1.NewTime(now.Add(-30 * time.Minute)),
		Count:          3,
	}
	// An Event of the new kind, written to the core API: eventTime, a series, the
	// reporting controller.
	recent := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "cm2.new"},
		InvolvedObject:      corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "cm2"},
		Reason:              "Observed",
		Message:             "seen twice",
		Type:                corev1.EventTypeNormal,
		Action:              "Observe",
		EventTime:           metav1.NewMicroTime(now.Add(-time.Hour)),
		Series:              &corev1.EventSeries{Count: 2, LastObservedTime: metav1.NewMicroTime(now.Add(-20 * time.Minute))},
		ReportingController: "example.com/events-test",
		ReportingInstance:   "events-test-1",
	}
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "lease1.new"},
		EventTime:           metav1.NewMicroTime(now.Add(-time.Hour)),
		Series:              &eventsv1.EventSeries{Count: 4, LastObservedTime: metav1.NewMicroTime(now.Add(-15 * time.Minute))},
		ReportingController: "example.com/events-test",
		ReportingInstance:   "events-test-1",
		Action:              "Renew",
		Reason:              "Renewed",
		Regarding:           corev1.ObjectReference{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: "default", Name: "lease1"},
		Note:                "renewed four times",
		Type:                corev1.EventTypeNormal,
	}
	created := map[string]string{} // resourceVersions by name
	for _, e := range []*corev1.Event{old, recent} {
		out, err := cs.CoreV1().Events("default").Create(ctx, e, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created[e.Name] = out.ResourceVersion
	}
	out, err := cs.EventsV1().Events("default").Create(ctx, ev, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created[ev.Name] = out.ResourceVersion

	t.Run("core/v1", func(t *testing.T) {
		evs := cs.CoreV1().Events("default")
		got, err := evs.Get(ctx, old.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != created[old.Name] || got.InvolvedObject != old.InvolvedObject || got.Count != 3 ||
			got.Source != old.Source || got.Message != old.Message || !got.LastTimestamp.Equal(&old.LastTimestamp) || !got.EventTime.IsZero() {
			t.Errorf("read back %+v, want what was written: %+v", got, old)
		}
		list, err := evs.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range list.Items {
			names = append(names, e.Name)
			if e.Name == recent.Name && (e.Series == nil || e.Series.Count != 2 || e.ReportingController != recent.ReportingController || e.Action != "Observe") {
				t.Errorf("listed %+v, want what was written: %+v", e, recent)
			}
		}
		if !slices.Contains(names, old.Name) || !slices.Contains(names, recent.Name) || !slices.Contains(names, ev.Name) {
			t.Errorf("listed %v, want %s, %s and the events.k8s.io Event %s", names, old.Name, recent.Name, ev.Name)
		}
		// The Event written through events.k8s.io, in core's fields.
		got, err = evs.Get(ctx, ev.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != created[ev.Name] || got.InvolvedObject != ev.Regarding || got.Message != ev.Note ||
			got.Series == nil || got.Series.Count != 4 || got.ReportingController != ev.ReportingController || got.Action != ev.Action {
			t.Errorf("read %s through core v1: %+v, want the events.k8s.io Event written: %+v", ev.Name, got, ev)
		}

		checkTable(t, "/api/v1/namespaces/default/events", old.Name, map[string]interface{}{
			"Last Seen": "30m", "Type": "Warning", "Reason": "Tested", "Object": "configmap/cm1", "Message": "the message",
		})
		checkTable(t, "/api/v1/namespaces/default/events", recent.Name, map[string]interface{}{
			"Last Seen": "20m", "Type": "Normal", "Reason": "Observed", "Object": "configmap/cm2", "Message": "seen twice",
		})
		checkTable(t, "/api/v1/namespaces/default/events/"+old.Name, old.Name, map[string]interface{}{"Object": "configmap/cm1"})
	})

	t.Run("events.k8s.io/v1", func(t *testing.T) {
		evs := cs.EventsV1().Events("default")
		got, err := evs.Get(ctx, ev.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != created[ev.Name] || got.Regarding != ev.Regarding || got.Note != ev.Note || got.Series == nil || got.Series.Count != 4 ||
			!got.EventTime.Equal(&ev.EventTime) || got.ReportingController != ev.ReportingController {
			t.Errorf("read back %+v, want what was written: %+v", got, ev)
		}
		list, err := evs.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range list.Items {
			names = append(names, e.Name)
		}
		if !slices.Contains(names, ev.Name) || !slices.Contains(names, old.Name) || !slices.Contains(names, recent.Name) {
			t.Errorf("listed %v, want %s and the core Events %s and %s", names, ev.Name, old.Name, recent.Name)
		}
		// The Event written through core v1, in events.k8s.io's fields.
		got, err = evs.Get(ctx, old.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != created[old.Name] || got.Regarding != old.InvolvedObject || got.Note != old.Message ||
			got.DeprecatedCount != 3 || got.DeprecatedSource != old.Source || !got.DeprecatedLastTimestamp.Equal(&old.LastTimestamp) {
			t.Errorf("read %s through events.k8s.io/v1: %+v, want the core Event written: %+v", old.Name, got, old)
		}
		checkTable(t, "/apis/events.k8s.io/v1/namespaces/default/events", ev.Name, map[string]interface{}{
			"Last Seen": "15m", "Type": "Normal", "Reason": "Renewed", "Object": "lease/lease1", "Message": "renewed four times",
		})
		// v1beta1 went in 1.25.
		if _, err := cs.EventsV1beta1().Events("default").List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("events.k8s.io/v1beta1 list: %v, want NotFound", err)
		}
	})

	t.Run("client-go recorders", func(t *testing.T) {
		cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "recorded"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}

		// The adapter finds events.k8s.io/v1 in discovery and records there; the
		// repeat turns the Event into a series.
		adapter := events.NewEventBroadcasterAdapterWithContext(ctx, cs)
		adapter.StartRecordingToSink(ctx.Done())
		defer adapter.Shutdown()
		rec := adapter.NewRecorder("events-test")
		recorded := func(series int32) func() (bool, error) {
			return func() (bool, error) {
				list, err := cs.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, err
				}
				for _, ev := range list.Items {
					if ev.Reason == "Recorded" && ev.Regarding.UID == cm.UID && ev.Regarding.Kind == "ConfigMap" &&
						ev.Note == "recorded by the new API" && ev.ReportingController == "events-test" && ev.Action == "Record" &&
						(series == 0 && ev.Series == nil || ev.Series != nil && ev.Series.Count == series) {
						return true, nil
					}
				}
				return false, nil
			}
		}
		// One at a time: the recorder writes concurrently, and a repeat that overtakes
		// the first write waits 10s before it retries.
		rec.Eventf(cm, nil, corev1.EventTypeNormal, "Recorded", "Record", "recorded by %s", "the new API")
		waitFor(t, "the recorded events.k8s.io/v1 Event", recorded(0))
		rec.Eventf(cm, nil, corev1.EventTypeNormal, "Recorded", "Record", "recorded by %s", "the new API")
		waitFor(t, "the recorded events.k8s.io/v1 Event with a series of 2", recorded(2))

		// The legacy recorder writes core v1 Events; the repeat raises count.
		b := record.NewBroadcaster(record.WithContext(ctx))
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
		defer b.Shutdown()
		legacy := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "events-test-legacy"})
		legacy.Eventf(cm, corev1.EventTypeWarning, "Legacy", "recorded by the %s API", "core")
		legacy.Eventf(cm, corev1.EventTypeWarning, "Legacy", "recorded by the %s API", "core")
		var name string
		waitFor(t, "the recorded core v1 Event with count 2", func() (bool, error) {
			list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			for _, ev := range list.Items {
				if ev.Reason == "Legacy" && ev.InvolvedObject.UID == cm.UID && ev.Message == "recorded by the core API" &&
					ev.Source.Component == "events-test-legacy" && ev.Count == 2 {
					name = ev.Name
					return true, nil
				}
			}
			return false, nil
		})
		checkTable(t, "/api/v1/namespaces/default/events/"+name, name, map[string]interface{}{
			"Type": "Warning", "Reason": "Legacy", "Object": "configmap/recorded", "Message": "recorded by the core API",
		})
	})

	t.Run("one resource in both groups", func(t *testing.T) {
		w, err := cs.EventsV1().Events("default").Watch(ctx, metav1.ListOptions{ResourceVersion: created[ev.Name]})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		core := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "watched.core"}, Reason: "Watched", Message: "written through core",
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "cm3"}, Type: corev1.EventTypeNormal,
			Source: corev1.EventSource{Component: "events-test"}}
		written, err := cs.CoreV1().Events("default").Create(ctx, core, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the core Event in the events.k8s.io watch", func() (bool, error) {
			select {
			case e := <-w.ResultChan():
				got, ok := e.Object.(*eventsv1.Event)
				return ok && got.Name == core.Name && got.UID == written.UID && got.Note == core.Message, nil
			default:
				return false, nil
			}
		})
		if err := cs.EventsV1().Events("default").Delete(ctx, core.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Events("default").Get(ctx, core.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get through core after a delete through events.k8s.io: %v, want NotFound", err)
		}
		// A name taken in one group is taken in the other.
		again := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: old.Name}, EventTime: metav1.NewMicroTime(now),
			ReportingController: "example.com/events-test", ReportingInstance: "events-test-1", Action: "Again", Reason: "Again",
			Regarding: old.InvolvedObject, Type: corev1.EventTypeNormal}
		if _, err := cs.EventsV1().Events("default").Create(ctx, again, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
			t.Errorf("create through events.k8s.io of a core Event's name: %v, want AlreadyExists", err)
		}
	})

	t.Run("kubectl", func(t *testing.T) {
		kubectl := kubectlOrSkip(t, s)
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"get", "events", "-n", "default"}, []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE", "configmap/cm1", "the message", "30m"}},
			{[]string{"get", "ev", "-n", "default"}, []string{"configmap/cm2", "seen twice"}},
			{[]string{"get", "events.events.k8s.io", "-n", "default"}, []string{"lease/lease1", "renewed four times", "15m", "configmap/cm1"}},
			{[]string{"get", "events", "-n", "default", "--field-selector", "involvedObject.kind=Lease"}, []string{"lease/lease1", "renewed four times"}},
			{[]string{"api-resources", "--api-group", "events.k8s.io"}, []string{"events", "ev", "events.k8s.io/v1", "Event"}},
		} {
			out, err := kubectl(tc.args...)
			if err != nil {
				t.Errorf("kubectl %s: %v\n%s", strings.Join(tc.args, " "), err, out)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("kubectl %s: output lacks %q:\n%s", strings.Join(tc.args, " "), w, out)
				}
			}
		}
	})
}

// The migration controller reports the objects it cannot rewrite in Events, and the
// end of the migration: as events.k8s.io/v1 Events where the server serves them (the
// failures of one migration then make one Event and its series), and as core v1
// Events where it serves only those (one Event per object).
func TestStorageMigrationFailuresAreEvents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		runtimeConfig []string
	}{
		{name: "events.k8s.io/v1"},
		{name: "core/v1 only", runtimeConfig: []string{"events.k8s.io/v1=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startMigrationCluster(t, 1, harness.WithServerOptions(func(_ int, o *controlplane.Options) {
				o.Compatibility.RuntimeConfig = append(o.Compatibility.RuntimeConfig, tc.runtimeConfig...)
			}))
			s := c.Servers[0]
			cs := s.Clientset(t)
			ctx := t.Context()
			coreOnly := tc.runtimeConfig != nil
			_, err := cs.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
			if coreOnly && !apierrors.IsNotFound(err) || !coreOnly && err != nil {
				t.Fatalf("events.k8s.io/v1 list: %v", err)
			}
			group := strings.NewReplacer("/", "-", " ", "-", ".", "-").Replace(tc.name) + ".events.example.com"
			e := newMigrationEnv(t, c, group, "v1")
			e.seed("good", "v1", 5, 1)
			e.seed("bad", "v1", 2, -1)
			e.flip("v2")
			runControllers(t, only(fastConfig(s.Config(), prometheus.NewRegistry()), s, e.gr))
			m := waitMigration(t, s.Dynamic(t), e.gr, 1, "to fail", phase(migrationapi.ConditionFailed))
			if p := m.Status.Progress; p == nil || p.Failed != 2 || p.Migrated != 5 {
				t.Errorf("progress %+v, want 5 migrated and 2 failed", p)
			}

			// event is what both APIs say of one Event; count is how many times it
			// happened (the series' count, or the legacy count).
			type event struct {
				kind, name, typ, reason, message, reporter string
				count                                      int32
			}
			list := func() ([]event, error) {
				var out []event
				if !coreOnly {
					l, err := cs.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
					if err != nil {
						return nil, err
					}
					for _, ev := range l.Items {
						count := int32(1)
						if ev.Series != nil {
							count = ev.Series.Count
						}
						out = append(out, event{ev.Regarding.Kind, ev.Regarding.Name, ev.Type, ev.Reason, ev.Note, ev.ReportingController, count})
					}
					return out, nil
				}
				l, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
				if err != nil {
					return nil, err
				}
				for _, ev := range l.Items {
					out = append(out, event{ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Type, ev.Reason, ev.Message, ev.Source.Component, ev.Count})
				}
				return out, nil
			}
			// The events.k8s.io recorder makes a series of Events that differ only in
			// their note, and writes the series' first repeat after the Event itself
			// only on a retry, 10s later: hence the longer wait.
			var failed []event
			var failures, ended int32
			deadline := time.Now().Add(45 * time.Second)
			for {
				all, err := list()
				if err != nil {
					t.Fatal(err)
				}
				failed, failures, ended = nil, 0, 0
				for _, ev := range all {
					if ev.kind != "StorageVersionMigration" || ev.name != m.Name || ev.reporter != "concord-storage-migrator" || ev.typ != corev1.EventTypeWarning {
						continue
					}
					switch ev.reason {
					case controller.EventObjectFailed:
						failed = append(failed, ev)
						failures += ev.count
					case controller.EventMigrationFailed:
						ended += ev.count
					}
				}
				if failures == 2 && ended == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 45s: Events %+v; want 2 %s and 1 %s regarding %s", all, controller.EventObjectFailed, controller.EventMigrationFailed, m.Name)
				}
				time.Sleep(100 * time.Millisecond)
			}
			// The legacy recorder keeps Events with different messages apart: one per
			// object.
			if coreOnly && (len(failed) != 2 || failed[0].message == failed[1].message) {
				t.Errorf("core Events %+v, want one for each bad object", failed)
			}
			for _, ev := range failed {
				if !regexp.MustCompile(`^default/bad-000[01] could not be rewritten in the storage version: .*spec\.size`).MatchString(ev.message) {
					t.Errorf("Event %q does not name a bad object and its invalid field", ev.message)
				}
			}
		})
	}
}

// Events expire --event-ttl after their last write, in both groups, and watchers see
// them go; other objects stay.
func TestEventsExpire(t *testing.T) {
	t.Parallel()
	const ttl = 2 * time.Second
	c := harness.Start(t, 1, harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		o.EventTTL = ttl
		o.DisableStorageMigration = true // no Events of its own
	}))
	cs := c.Servers[0].Clientset(t)
	ctx := t.Context()
	w, err := cs.CoreV1().Events("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created := time.Now()
	if _, err := cs.CoreV1().Events("default").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "short-lived"},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "cm"},
		Reason:         "Tested", Message: "gone soon", Type: corev1.EventTypeNormal,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.EventsV1().Events("default").Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "short-lived-too"},
		EventTime:  metav1.NowMicro(), ReportingController: "example.com/test", ReportingInstance: "i",
		Action: "Test", Reason: "Tested", Type: corev1.EventTypeNormal,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stays"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := false
	for !deleted {
		select {
		case ev := <-w.ResultChan():
			deleted = ev.Type == "DELETED"
		case <-time.After(10 * time.Second):
			t.Fatal("no deletion watched within 10s")
		}
	}
	if gone := time.Since(created); gone < ttl {
		t.Fatalf("the Event went after %s, before its TTL %s", gone, ttl)
	}
	waitFor(t, "the events.k8s.io Event to expire", func() (bool, error) {
		_, err := cs.EventsV1().Events("default").Get(ctx, "short-lived-too", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "stays", metav1.GetOptions{}); err != nil {
		t.Fatalf("a ConfigMap written with the Events went too: %v", err)
	}
}

// Core Events answer the field selectors kubectl describe lists an object's Events
// with; unknown fields are refused as Kubernetes refuses them.
func eventFieldSelectors(t *testing.T, c *harness.Cluster, ns string) {
	cs := c.Servers[0].Clientset(t)
	ctx := t.Context()
	for _, e := range []struct{ name, kind, object, typ string }{
		{"e1", "ConfigMap", "cm1", corev1.EventTypeNormal},
		{"e2", "ConfigMap", "cm2", corev1.EventTypeWarning},
		{"e3", "Secret", "cm1", corev1.EventTypeNormal},
	} {
		if _, err := cs.CoreV1().Events(ns).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: e.name},
			InvolvedObject: corev1.ObjectReference{Kind: e.kind, Namespace: ns, Name: e.object, UID: types.UID("uid-" + e.object)},
			Reason:         "Tested", Message: "m", Type: e.typ,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for sel, want := range map[string]string{
		"involvedObject.name=cm1,involvedObject.namespace=" + ns + ",involvedObject.kind=ConfigMap,involvedObject.uid=uid-cm1": "e1",
		"type=Warning": "e2",
		"involvedObject.kind!=ConfigMap,reason=Tested": "e3",
	} {
		list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		var names []string
		for _, e := range list.Items {
			names = append(names, e.Name)
		}
		if strings.Join(names, ",") != want {
			t.Errorf("%s: listed %v, want %s", sel, names, want)
		}
	}
	if _, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "message=m"}); !apierrors.IsBadRequest(err) {
		t.Errorf("an unsupported field: %v, want 400", err)
	}
}
