package builtin

import (
	"strings"
	"time"

	"github.com/concordproject/concord/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	coreEventsGR = schema.GroupResource{Resource: "events"}
	eventsGR     = schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
)

// configureEvents gives an Event resource (core or events.k8s.io, whose names for the
// fields are f) Kubernetes' behaviour: every write sets the Event to expire ttl later
// (--event-ttl); core Events answer the field selectors kubectl describe uses; both
// print as kubectl prints them, when their columns are the catalog's (with other
// columns, from an --api-catalog file, the columns' JSONPaths apply).
func configureEvents(res *registry.Resource, f eventFields, ttl time.Duration) error {
	res.TTL = ttl
	// As in Kubernetes, deleting an Event never waits for the garbage collector.
	res.GarbageCollection.Unsupported = true
	if res.GroupResource() == coreEventsGR {
		// The field selectors of Kubernetes' core Events, but source, which names
		// source.component.
		for i := range res.Versions {
			for _, field := range coreEventSelectableFields {
				res.Versions[i].SelectableFields = append(res.Versions[i].SelectableFields, apiextensionsv1.SelectableField{JSONPath: "." + field})
			}
		}
	}
	if res.HasPrinterColumns(eventColumns) {
		res.Hooks = &registry.Hooks{TableCells: eventTableCells(f)}
	}
	return nil
}

// coreEventSelectableFields are the fields of core Events usable in field selectors.
var coreEventSelectableFields = []string{
	"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
	"involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
	"reason", "reportingComponent", "type",
}

// eventColumns are the printer columns eventTableCells fills, those of the catalog.
var eventColumns = []string{"Last Seen", "Type", "Reason", "Object", "Message"}

// eventFields are the names an Event's group gives the fields its table reads.
type eventFields struct{ firstTimestamp, lastTimestamp, involvedObject, message string }

var (
	coreEventFields   = eventFields{"firstTimestamp", "lastTimestamp", "involvedObject", "message"}
	eventsEventFields = eventFields{"deprecatedFirstTimestamp", "deprecatedLastTimestamp", "regarding", "note"}
)

// eventTableCells returns the cells of eventColumns for an Event whose group names its
// fields f, computed as kube-apiserver's printer does: LAST SEEN is the age of the
// series' last observation, else of lastTimestamp, else of firstTimestamp, else of
// eventTime; OBJECT is kind/name, the kind in lower case.
func eventTableCells(f eventFields) func(obj *unstructured.Unstructured) []interface{} {
	return func(obj *unstructured.Unstructured) []interface{} {
		str := func(path ...string) string {
			s, _, _ := unstructured.NestedString(obj.Object, path...)
			return s
		}
		timestamp := func(path ...string) metav1.Time {
			var t metav1.Time
			if s := str(path...); s != "" {
				_ = t.UnmarshalQueryParameter(s) // RFC 3339, with or without fractional seconds
			}
			return t
		}
		last := timestamp(f.lastTimestamp)
		if last.IsZero() {
			last = timestamp(f.firstTimestamp)
		}
		if last.IsZero() {
			last = timestamp("eventTime")
		}
		if _, ok := obj.Object["series"].(map[string]interface{}); ok {
			last = timestamp("series", "lastObservedTime")
		}
		object := strings.ToLower(str(f.involvedObject, "kind"))
		if name := str(f.involvedObject, "name"); name != "" {
			object += "/" + name
		}
		return []interface{}{
			metatable.ConvertToHumanReadableDateType(last),
			str("type"),
			str("reason"),
			object,
			strings.TrimSpace(str(f.message)),
		}
	}
}
