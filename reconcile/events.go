package reconcile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// The resources Events are written to, the first served one: the events.k8s.io API,
// else the core one.
var (
	eventsV1Events = eventsv1.SchemeGroupVersion.WithResource("events")
	coreV1Events   = corev1.SchemeGroupVersion.WithResource("events")
)

// NewRecorder returns the Event recorder of a controller named component, with the
// function that stops it. Like
// client-go's events.NewEventBroadcasterAdapter, it writes events.k8s.io/v1 Events
// where the server serves them and core v1 Events where it serves only those, but it
// decides by served (the controllers' discovery) rather than by asking discovery
// again, and where neither is served it only logs the Events.
func NewRecorder(ctx context.Context, cs kubernetes.Interface, served func(schema.GroupVersionResource) bool, component string) (events.EventRecorder, func()) {
	logger := klog.FromContext(ctx)
	switch {
	case served(eventsV1Events):
		b := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
		if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
			logger.Error(err, "Events will only be logged")
			return logRecorder{logger: logger}, func() {}
		}
		logger.V(4).Info("Recording Events", "resource", eventsV1Events)
		return b.NewRecorder(scheme.Scheme, component), b.Shutdown
	case served(coreV1Events):
		b := record.NewBroadcaster(record.WithContext(ctx))
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
		logger.V(4).Info("Recording Events", "resource", coreV1Events)
		legacy := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
		return record.NewEventRecorderAdapter(legacy), b.Shutdown
	}
	logger.V(2).Info("The server serves no Events: they will only be logged")
	return logRecorder{logger: logger}, func() {}
}

// logRecorder is the recorder for servers that do not serve Events: it logs them.
type logRecorder struct{ logger klog.Logger }

func (r logRecorder) Eventf(regarding runtime.Object, _ runtime.Object, eventtype, reason, action, note string, args ...interface{}) {
	name := ""
	if u, ok := regarding.(*unstructured.Unstructured); ok {
		name = u.GetName()
	}
	r.logger.V(2).Info("Event", "object", name, "type", eventtype, "reason", reason, "action", action, "note", fmt.Sprintf(note, args...))
}
