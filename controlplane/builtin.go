package controlplane

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/migration"
	"github.com/concordproject/concord/namespace"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/storageversion"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	namespacesGR = schema.GroupResource{Resource: "namespaces"}
	leasesGR     = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	coreEventsGR = schema.GroupResource{Resource: "events"}
	eventsGR     = schema.GroupResource{Group: "events.k8s.io", Resource: "events"}
)

// builtinHooks are the Go behaviours of built-in resources; every other catalog
// resource is storage-only.
func builtinHooks() map[schema.GroupResource]*registry.Hooks {
	return map[schema.GroupResource]*registry.Hooks{
		namespacesGR: namespace.Hooks(),
		// Leases may be created by PUT, as in Kubernetes.
		leasesGR: {AllowCreateOnUpdate: true},
		// Events print as kubectl prints them.
		coreEventsGR: {TableCells: eventTableCells(coreEventFields)},
		eventsGR:     {TableCells: eventTableCells(eventsEventFields)},
	}
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

// builtinResources are the resources of the catalog the server serves.
func builtinResources(compat *compatibility.Config, eventTTL time.Duration) ([]*registry.Resource, error) {
	res, err := compat.Resources(builtinHooks())
	if err != nil {
		return nil, err
	}
	for _, r := range res {
		if gr := r.GroupResource(); gr == coreEventsGR || gr == eventsGR {
			r.TTL = eventTTL // Events expire, as in Kubernetes
		}
		if r.GroupResource() == coreEventsGR {
			// The field selectors of Kubernetes' core Events (kubectl describe lists
			// an object's Events with them), but source, which names source.component.
			for i := range r.Versions {
				for _, f := range coreEventSelectableFields {
					r.Versions[i].SelectableFields = append(r.Versions[i].SelectableFields, apiextensionsv1.SelectableField{JSONPath: "." + f})
				}
			}
		}
	}
	for _, r := range res {
		if r.GroupResource() == migration.StorageVersionMigrations.GroupResource() {
			if err := migration.ExtendStorageVersionMigration(r); err != nil {
				return nil, err
			}
		}
	}
	for _, r := range res {
		if r.GroupResource() == storageversion.GroupResource {
			storageversion.Configure(r)
		}
	}
	// Events computed by Go need the columns they compute: with other columns (from
	// an --api-catalog file), the columns' JSONPaths apply.
	for _, r := range res {
		if gr := r.GroupResource(); (gr == coreEventsGR || gr == eventsGR) && r.Hooks != nil && !hasColumns(r, eventColumns) {
			h := *r.Hooks
			h.TableCells = nil
			r.Hooks = &h
		}
	}
	for _, gr := range []schema.GroupResource{namespacesGR, leasesGR} {
		found := false
		for _, r := range res {
			found = found || r.GroupResource() == gr
		}
		if !found {
			return nil, fmt.Errorf("the API catalog does not define %s, which every server needs", gr)
		}
	}
	return res, nil
}

// hasColumns reports whether every version of r has exactly the printer columns names.
func hasColumns(r *registry.Resource, names []string) bool {
	for _, v := range r.Versions {
		if !slices.EqualFunc(v.PrinterColumns, names, func(c apiextensionsv1.CustomResourceColumnDefinition, name string) bool { return c.Name == name }) {
			return false
		}
	}
	return true
}

// gitVersion names the build in /version: the binary's release, marked as Concord's.
func gitVersion(compat *compatibility.Config) string {
	b := compat.Versions.Binary
	return fmt.Sprintf("v%d.%d.0-concord", b.Major(), b.Minor())
}
