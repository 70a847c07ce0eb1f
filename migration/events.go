package migration

import (
	"context"
	"fmt"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
)

// componentName is the reporting controller of the Events the controllers emit and
// the field manager of their writes.
const componentName = "concord-storage-migrator"

// The Events' reasons.
const (
	EventObjectFailed       = "ObjectNotMigrated"
	EventMigrationSucceeded = "MigrationSucceeded"
	EventMigrationFailed    = "MigrationFailed"
	EventStoredVersions     = "StoredVersionsTrimmed"
)

// newRecorder returns an Event recorder writing events.k8s.io/v1 Events when the
// server serves them, and one that only logs otherwise, with the function that stops
// it.
func newRecorder(ctx context.Context, cs kubernetes.Interface, served bool) (events.EventRecorder, func()) {
	if !served {
		return logRecorder{logger: klog.FromContext(ctx)}, func() {}
	}
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Events will only be logged")
		return logRecorder{logger: klog.FromContext(ctx)}, func() {}
	}
	return b.NewRecorder(scheme.Scheme, componentName), b.Shutdown
}

// eventsServed is the resource events need.
var eventsServed = eventsv1.SchemeGroupVersion.WithResource("events")

// logRecorder is the recorder for servers that do not serve Events: it logs them.
type logRecorder struct{ logger klog.Logger }

func (r logRecorder) Eventf(regarding runtime.Object, _ runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	name := ""
	if u, ok := regarding.(*unstructured.Unstructured); ok {
		name = u.GetName()
	}
	r.logger.V(2).Info("Event", "object", name, "type", eventtype, "reason", reason, "action", action, "note", fmt.Sprintf(note, args...))
}
