package differential

import (
	"net/http"
)

// sharedEventCases hold Events to being one resource served in two groups: an Event
// written through core v1 is read and changed through events.k8s.io/v1 and back, one
// written through events.k8s.io/v1 likewise through core v1 (server-side apply
// included, whose managed fields then name both groups), and a name taken in one
// group is taken in the other. r is the core resource; the cases use its namespace
// for both groups' paths.
func sharedEventCases(r resource) []tcase {
	ns := r.namespace()
	core := func(n string) string { return "/api/v1/namespaces/" + ns + "/events/" + n }
	events := func(n string) string { return "/apis/events.k8s.io/v1/namespaces/" + ns + "/events/" + n }
	coreEvent := func(n string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": n, "namespace": ns},
			"involvedObject": map[string]any{"apiVersion": "v1", "kind": "Pod", "name": "some-pod", "namespace": ns},
			"reason":         "Started", "message": "Started container", "type": "Normal",
			"source": map[string]any{"component": "differential"}, "count": 1}
	}
	eventsEvent := func(n string) map[string]any {
		return map[string]any{"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": map[string]any{"name": n, "namespace": ns},
			"eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "differential.example.com/controller",
			"reportingInstance": "instance-1", "action": "Scheduling", "reason": "Scheduled", "type": "Normal", "note": "Scheduled a pod",
			"regarding": map[string]any{"apiVersion": "v1", "kind": "Pod", "name": "some-pod", "namespace": ns}}
	}
	label := func(k string) map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": map[string]any{"differential/" + k: "yes"}}}
	}
	post := func(path string, body map[string]any) step {
		return step{method: http.MethodPost, path: path, ctype: jsonType, body: body}
	}
	get := func(path string) step { return step{method: http.MethodGet, path: path} }
	base := r.id() + "/shared/"
	var out []tcase
	add := func(label string, invalid bool, steps func(n string) []step) {
		id := base + label
		out = append(out, tcase{id: id, res: r, invalid: invalid, steps: steps(objName(id))})
	}
	add("written-as-core", false, func(n string) []step {
		return []step{post("/api/v1/namespaces/"+ns+"/events", coreEvent(n)), get(events(n)),
			{method: http.MethodPatch, path: events(n), ctype: mergeType, body: label("merge")}, get(core(n))}
	})
	add("written-as-events", false, func(n string) []step {
		return []step{post("/apis/events.k8s.io/v1/namespaces/"+ns+"/events", eventsEvent(n)), get(core(n)),
			{method: http.MethodPatch, path: core(n), ctype: smpType, body: label("smp")}, get(events(n))}
	})
	add("applied-in-both", false, func(n string) []step {
		applied := eventsEvent(n)
		applied["metadata"].(map[string]any)["labels"] = map[string]any{"differential/owner": "a"}
		return []step{{method: http.MethodPatch, path: events(n) + "?fieldManager=a", ctype: applyType, body: applied},
			{method: http.MethodPatch, path: core(n) + "?fieldManager=b", ctype: applyType, body: map[string]any{
				"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": n, "namespace": ns,
					"labels": map[string]any{"differential/b": "yes"}}}},
			get(events(n)), get(core(n))}
	})
	add("one-name", true, func(n string) []step {
		return []step{post("/api/v1/namespaces/"+ns+"/events", coreEvent(n)), post("/apis/events.k8s.io/v1/namespaces/"+ns+"/events", eventsEvent(n))}
	})
	return out
}
