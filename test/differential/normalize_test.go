package differential

import (
	"encoding/json"
	"regexp"
	"sort"
)

// Placeholders of what varies from run to run.
const (
	timePlaceholder  = "<time>"
	uidPlaceholder   = "<uid>"
	ipPlaceholder    = "<ip>"
	portPlaceholder  = "<node port>"
	asyncPlaceholder = "<written by a controller>"
)

var (
	timestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
	uuid      = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	uuidIn    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeIn    = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	generated = regexp.MustCompile(`kube-api-access-[a-z0-9]{5}`)
)

// asyncStatus are the kinds whose status a controller of the server writes soon
// after a write (a ResourceQuota's usage: Concord's own controller, kube's
// controller manager, which does not run here): what a read finds there depends on
// timing.
var asyncStatus = map[string]bool{"ResourceQuota": true,
	"CustomResourceDefinition": true, "APIService": true, "FlowSchema": true, "PriorityLevelConfiguration": true,
	"ServiceCIDR": true, "ValidatingAdmissionPolicy": true, "MutatingAdmissionPolicy": true,
}

// normalize replaces, in place, what varies from run to run in an answered object by
// placeholders: its uid and resourceVersion, every timestamp and UUID, Services'
// allocated cluster IPs and node ports, generated names, and the status a
// controller writes on its own time. It drops the managedFields entries of the
// status subresource (the cases never write it: a controller of the server did,
// on its own time), sorts a SelfSubjectRulesReview's rules (in no order) and a
// list's items by name.
func normalize(obj map[string]any) map[string]any {
	if meta, ok := obj["metadata"].(map[string]any); ok {
		for _, k := range []string{"resourceVersion", "uid"} {
			if _, ok := meta[k]; ok {
				meta[k] = "<" + k + ">"
			}
		}
	}
	dropStatusManagers(obj)
	kind, _ := obj["kind"].(string)
	if kind == "SelfSubjectRulesReview" {
		sortRules(obj)
	}
	if asyncStatus[kind] {
		// Whether the controller wrote it yet is a matter of timing.
		obj["status"] = asyncPlaceholder
	}
	if kind == "Service" {
		normalizeService(obj)
	}
	if items, ok := obj["items"].([]any); ok {
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				normalize(m)
			}
		}
		sort.SliceStable(items, func(i, j int) bool { return itemName(items[i]) < itemName(items[j]) })
	}
	scrub(obj)
	return obj
}

func normalizeService(obj map[string]any) {
	spec, _ := obj["spec"].(map[string]any)
	if ip, _ := spec["clusterIP"].(string); ip != "" && ip != "None" {
		spec["clusterIP"] = ipPlaceholder
	}
	if ips, ok := spec["clusterIPs"].([]any); ok {
		for i, ip := range ips {
			if ip != "None" {
				ips[i] = ipPlaceholder
			}
		}
	}
	if _, ok := spec["healthCheckNodePort"]; ok {
		spec["healthCheckNodePort"] = portPlaceholder
	}
	ports, _ := spec["ports"].([]any)
	for _, p := range ports {
		if m, ok := p.(map[string]any); ok {
			if _, ok := m["nodePort"]; ok {
				m["nodePort"] = portPlaceholder
			}
		}
	}
}

// scrub replaces timestamps, UUIDs and generated names wherever they are.
func scrub(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = scrub(x)
		}
	case []any:
		for i, x := range v {
			v[i] = scrub(x)
		}
	case string:
		switch {
		case timestamp.MatchString(v):
			return timePlaceholder
		case uuid.MatchString(v):
			return uidPlaceholder
		}
		return generated.ReplaceAllString(v, "kube-api-access-<generated>")
	}
	return v
}

func itemName(item any) string {
	m, _ := item.(map[string]any)
	meta, _ := m["metadata"].(map[string]any)
	n, _ := meta["name"].(string)
	return n
}

func dropStatusManagers(obj map[string]any) {
	meta, _ := obj["metadata"].(map[string]any)
	entries, ok := meta["managedFields"].([]any)
	if !ok {
		return
	}
	kept := []any{}
	for _, e := range entries {
		if m, _ := e.(map[string]any); m["subresource"] != "status" {
			kept = append(kept, e)
		}
	}
	meta["managedFields"] = kept
}

func sortRules(obj map[string]any) {
	status, _ := obj["status"].(map[string]any)
	for _, k := range []string{"resourceRules", "nonResourceRules"} {
		rules, _ := status[k].([]any)
		sort.Slice(rules, func(i, j int) bool {
			a, _ := json.Marshal(rules[i])
			b, _ := json.Marshal(rules[j])
			return string(a) < string(b)
		})
	}
}

// scrubMessage replaces the UUIDs and timestamps in a Status's message, so that a
// recording changes only where an answer does.
func scrubMessage(msg string) string {
	return timeIn.ReplaceAllString(uuidIn.ReplaceAllString(msg, uidPlaceholder), timePlaceholder)
}
