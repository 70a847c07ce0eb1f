package differential

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Caps of the generated cases per seed: invalid variants, changes on update.
const (
	maxVariants = 14
	maxChanges  = 5
)

// mutation is a change of one field of a prepared object.
type mutation struct {
	label string
	// family groups mutations of one sort; a seed's are taken from every family in turn.
	family string
	apply  func(obj map[string]any)
}

// leaf is a field of a seed's object that is not an object or a list.
type leaf struct {
	path  []any // keys (string) and indexes (int)
	value any
}

func pathString(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, p)
		}
	}
	return b.String()
}

// leaves walks obj but its metadata and status, the first element of each list only.
func leaves(obj map[string]any) []leaf {
	var out []leaf
	var walk func(v any, path []any)
	walk = func(v any, path []any) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(v) {
				if len(path) == 0 && (k == "metadata" || k == "status" || k == "apiVersion" || k == "kind") {
					continue
				}
				walk(v[k], append(append([]any{}, path...), k))
			}
		case []any:
			if len(v) > 0 {
				walk(v[0], append(append([]any{}, path...), 0))
			}
		default:
			out = append(out, leaf{path: path, value: v})
		}
	}
	walk(obj, nil)
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// at returns the container of path's last element and that element, following path
// through obj; ok is false when the path leads nowhere.
func at(obj map[string]any, path []any) (parent any, last any, ok bool) {
	var cur any = obj
	for i, p := range path {
		if i == len(path)-1 {
			return cur, p, true
		}
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p.(string)]
		case []any:
			if p.(int) >= len(c) {
				return nil, nil, false
			}
			cur = c[p.(int)]
		default:
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// set sets (or with del, deletes) path in obj.
func set(obj map[string]any, path []any, value any, del bool) {
	parent, last, ok := at(obj, path)
	if !ok {
		return
	}
	switch p := parent.(type) {
	case map[string]any:
		if del {
			delete(p, last.(string))
		} else {
			p[last.(string)] = value
		}
	case []any:
		if i := last.(int); i < len(p) {
			p[i] = value
		}
	}
}

func setMut(family string, path []any, label string, value any) mutation {
	return mutation{label: pathString(path) + "=" + label, family: family,
		apply: func(obj map[string]any) { set(obj, path, value, false) }}
}

func metaMutations() []mutation {
	meta := func(label string, f func(meta map[string]any)) mutation {
		return mutation{label: "metadata." + label, family: "metadata", apply: func(obj map[string]any) {
			f(obj["metadata"].(map[string]any))
		}}
	}
	labels := func(meta map[string]any) map[string]any {
		l, _ := meta["labels"].(map[string]any)
		if l == nil {
			l = map[string]any{}
			meta["labels"] = l
		}
		return l
	}
	named := func(m map[string]any) string {
		if n, ok := m["name"].(string); ok {
			return n
		}
		return "review"
	}
	return []mutation{
		meta("name=Upper", func(m map[string]any) { m["name"] = "Upper-" + named(m) }),
		meta("name=underscore", func(m map[string]any) { m["name"] = "under_" + named(m) }),
		meta("name=too-long", func(m map[string]any) { m["name"] = strings.Repeat("a", 254) }),
		meta("name=leading-dash", func(m map[string]any) { m["name"] = "-" + named(m) }),
		meta("name=missing", func(m map[string]any) { delete(m, "name") }),
		meta("labels=bad-key", func(m map[string]any) { labels(m)["bad key/x/y"] = "v" }),
		meta("labels=long-value", func(m map[string]any) { labels(m)["long"] = strings.Repeat("v", 64) }),
		meta("annotations=bad-key", func(m map[string]any) { m["annotations"] = map[string]any{"-bad": "v"} }),
	}
}

var (
	enumLike     = regexp.MustCompile(`^[A-Z][A-Za-z]+$`)
	quantityLike = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|M|G|T)?$`)
	ipLike       = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+(/[0-9]+)?$`)
	freeForm     = regexp.MustCompile(`(^|\.)(data|stringData|binaryData|labels|annotations|matchLabels|parameters|attributes|nodeSelector|selector|command|args|message|note|description|expression|messageExpression)(\.|\[|$)`)
)

// leafMutations make each leaf invalid in the ways its type and name suggest.
func leafMutations(l leaf) []mutation {
	path, key := l.path, fmt.Sprint(l.path[len(l.path)-1])
	lower := strings.ToLower(key)
	p := pathString(path)
	var out []mutation
	switch v := l.value.(type) {
	case float64:
		out = append(out, setMut("number", path, "-1", -1))
		if strings.Contains(lower, "port") {
			out = append(out, setMut("port", path, "70000", 70000))
		}
		out = append(out, setMut("type", path, "string", "seven"))
	case string:
		switch {
		case key == "expression":
			out = append(out, setMut("format", path, "bad-CEL", "object.("))
		case key == "schedule":
			out = append(out, setMut("format", path, "bad-cron", "61 * * * *"))
		case enumLike.MatchString(v) && !freeForm.MatchString(p):
			out = append(out, setMut("enum", path, "Bogus", "Bogus"))
		case quantityLike.MatchString(v) && !freeForm.MatchString(p):
			out = append(out, setMut("quantity", path, "12xyz", "12xyz"), setMut("quantity", path, "-1", "-1"))
		case ipLike.MatchString(v):
			out = append(out, setMut("format", path, "bad-ip", "999.1.2.3"))
		case strings.HasSuffix(lower, "name") && !freeForm.MatchString(p):
			out = append(out, setMut("name", path, "Bad_Name", "Bad_Name"))
		case key == "image":
			out = append(out, setMut("format", path, "spaces", " with spaces "))
		}
		if v != "" && !freeForm.MatchString(p) {
			out = append(out, setMut("empty", path, "empty", ""))
		}
	case bool:
		out = append(out, setMut("type", path, "string", "yes"))
	}
	return out
}

// structureMutations delete fields (missing required ones), duplicate the first
// element of lists of named objects, and break label selectors.
func structureMutations(obj map[string]any) []mutation {
	var out []mutation
	var walk func(v any, path []any, depth int)
	walk = func(v any, path []any, depth int) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(v) {
				if len(path) == 0 && (k == "metadata" || k == "status" || k == "apiVersion" || k == "kind") {
					continue
				}
				sub := append(append([]any{}, path...), k)
				if depth < 4 {
					out = append(out, mutation{label: "missing " + pathString(sub), family: "missing",
						apply: func(o map[string]any) { set(o, sub, nil, true) }})
				}
				if k == "matchLabels" || k == "selector" && isStringMap(v[k]) {
					out = append(out, mutation{label: pathString(sub) + "=bad-key", family: "selector",
						apply: func(o map[string]any) { addKey(o, sub, "bad key!", "v") }})
				}
				walk(v[k], sub, depth+1)
			}
		case []any:
			if len(v) == 0 {
				return
			}
			if m, ok := v[0].(map[string]any); ok && (m["name"] != nil || m["port"] != nil) {
				out = append(out, mutation{label: "duplicate " + pathString(path) + "[0]", family: "duplicate",
					apply: func(o map[string]any) { duplicateFirst(o, path) }})
			}
			walk(v[0], append(append([]any{}, path...), 0), depth+1)
		}
	}
	walk(obj, nil, 0)
	return out
}

func isStringMap(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return false
	}
	for _, x := range m {
		if _, ok := x.(string); !ok {
			return false
		}
	}
	return true
}

func addKey(obj map[string]any, path []any, k string, v any) {
	parent, last, ok := at(obj, path)
	if !ok {
		return
	}
	if p, ok := parent.(map[string]any); ok {
		if m, ok := p[last.(string)].(map[string]any); ok {
			m[k] = v
		}
	}
}

func duplicateFirst(obj map[string]any, path []any) {
	parent, last, ok := at(obj, path)
	if !ok {
		return
	}
	if p, ok := parent.(map[string]any); ok {
		if list, ok := p[last.(string)].([]any); ok && len(list) > 0 {
			p[last.(string)] = append(list, deepCopy(map[string]any{"x": list[0]})["x"])
		}
	}
}

// conflicts are pairs of fields that may not be set together, by kind.
var conflicts = map[string][]mutation{
	"PodDisruptionBudget": {{label: "minAvailable+maxUnavailable", family: "conflict", apply: func(o map[string]any) {
		spec := o["spec"].(map[string]any)
		spec["minAvailable"], spec["maxUnavailable"] = 1, 1
	}}},
	"HorizontalPodAutoscaler": {{label: "minReplicas>maxReplicas", family: "conflict", apply: func(o map[string]any) {
		spec := o["spec"].(map[string]any)
		spec["minReplicas"], spec["maxReplicas"] = 10, 2
	}}},
	"Service": {{label: "ExternalName+clusterIP", family: "conflict", apply: func(o map[string]any) {
		spec := o["spec"].(map[string]any)
		spec["type"], spec["externalName"], spec["clusterIP"] = "ExternalName", "example.com", "10.96.0.99"
	}}, {label: "clusterIP-out-of-range", family: "conflict", apply: func(o map[string]any) {
		o["spec"].(map[string]any)["clusterIP"] = "10.200.0.10"
	}}, {label: "nodePort-on-ClusterIP", family: "conflict", apply: func(o map[string]any) {
		spec := o["spec"].(map[string]any)
		spec["type"] = "ClusterIP"
		spec["ports"] = []any{map[string]any{"port": 80, "nodePort": 30080}}
	}}},
	"Deployment":  {selectorMismatch, recreateWithRollingUpdate},
	"ReplicaSet":  {selectorMismatch},
	"StatefulSet": {selectorMismatch},
	"DaemonSet":   {selectorMismatch},
	"Job": {{label: "completions<parallelism-Indexed-missing-completions", family: "conflict", apply: func(o map[string]any) {
		spec := o["spec"].(map[string]any)
		spec["completionMode"] = "Indexed"
		delete(spec, "completions")
	}}},
}

var selectorMismatch = mutation{label: "selector-does-not-match-template", family: "conflict", apply: func(o map[string]any) {
	spec, _ := o["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	meta, _ := tmpl["metadata"].(map[string]any)
	if meta != nil {
		meta["labels"] = map[string]any{"differential": "mismatch"}
	}
}}

var recreateWithRollingUpdate = mutation{label: "Recreate+rollingUpdate", family: "conflict", apply: func(o map[string]any) {
	o["spec"].(map[string]any)["strategy"] = map[string]any{"type": "Recreate", "rollingUpdate": map[string]any{"maxSurge": 1}}
}}

// variants are a seed's invalid variants: at most maxVariants, taken from every
// family of mutations in turn, each family in path order.
func variants(s seed) []mutation {
	all := metaMutations()
	for _, l := range leaves(s.obj) {
		all = append(all, leafMutations(l)...)
	}
	all = append(all, structureMutations(s.obj)...)
	all = append(all, conflicts[s.res.kind]...)
	return roundRobin(all, maxVariants)
}

// roundRobin takes up to limit mutations, one of each family in turn (families in
// order of first appearance), dropping repeated labels.
func roundRobin(all []mutation, limit int) []mutation {
	var families []string
	byFamily := map[string][]mutation{}
	seen := map[string]bool{}
	for _, m := range all {
		if seen[m.label] {
			continue
		}
		seen[m.label] = true
		if byFamily[m.family] == nil {
			families = append(families, m.family)
		}
		byFamily[m.family] = append(byFamily[m.family], m)
	}
	var out []mutation
	for i := 0; len(out) < limit; i++ {
		took := false
		for _, f := range families {
			if i < len(byFamily[f]) && len(out) < limit {
				out = append(out, byFamily[f][i])
				took = true
			}
		}
		if !took {
			break
		}
	}
	return out
}

// alternatives are other valid values of enumerations, for changes on update.
var alternatives = map[string]string{
	"ClusterIP": "NodePort", "NodePort": "ClusterIP", "LoadBalancer": "ClusterIP", "ExternalName": "ClusterIP",
	"TCP": "UDP", "UDP": "TCP", "Always": "Never", "Never": "Always", "OnFailure": "Never", "IfNotPresent": "Always",
	"Retain": "Delete", "Delete": "Retain", "Recycle": "Retain", "RollingUpdate": "Recreate", "Recreate": "RollingUpdate",
	"OrderedReady": "Parallel", "Parallel": "OrderedReady", "ReadWriteOnce": "ReadWriteMany", "ReadWriteMany": "ReadOnlyMany",
	"Filesystem": "Block", "Block": "Filesystem", "Immediate": "WaitForFirstConsumer", "WaitForFirstConsumer": "Immediate",
	"Forbid": "Allow", "Allow": "Replace", "Fail": "Ignore", "Ignore": "Fail", "None": "Some", "NonIndexed": "Indexed",
	"Indexed": "NonIndexed", "Namespaced": "Cluster", "Cluster": "Namespaced", "Local": "Cluster", "IPv4": "IPv6",
}

// priorityWords mark the fields whose changes are tried first: those kube-apiserver
// holds immutable or whose transitions it restricts.
var priorityWords = []string{"selector", "clusterIP", "storageClassName", "template", "roleRef", "serviceName",
	"volumeClaimTemplates", "provisioner", "handler", "addressType", "parentRef", "cidrs", "request", "signerName",
	"driver", "type", "volumeName", "accessModes", "completionMode", "podManagementPolicy", "value", "immutable",
	"data", "group", "scope", "attacher", "nodeName", "source", "persistentVolumeReclaimPolicy", "volumeMode"}

// changes are valid-looking changes of one field each, for updates: the fields named
// by priorityWords first, at most maxChanges.
func changes(s seed) []mutation {
	var first, rest []mutation
	for _, l := range leaves(s.obj) {
		m, ok := changeLeaf(l)
		if !ok {
			continue
		}
		if hasPriority(pathString(l.path)) {
			first = append(first, m)
		} else {
			rest = append(rest, m)
		}
	}
	out := append(first, rest...)
	if len(out) > maxChanges {
		out = out[:maxChanges]
	}
	return out
}

func hasPriority(p string) bool {
	for _, w := range priorityWords {
		if strings.Contains(p, w) {
			return true
		}
	}
	return false
}

func changeLeaf(l leaf) (mutation, bool) {
	switch v := l.value.(type) {
	case float64:
		return setMut("change", l.path, fmt.Sprint(v+1), v+1), true
	case bool:
		return setMut("change", l.path, fmt.Sprint(!v), !v), true
	case string:
		if alt, ok := alternatives[v]; ok {
			return setMut("change", l.path, alt, alt), true
		}
		if v == "" || ipLike.MatchString(v) || quantityLike.MatchString(v) || strings.ContainsAny(v, " \n/:") {
			return mutation{}, false
		}
		return setMut("change", l.path, v+"-changed", v+"-changed"), true
	}
	return mutation{}, false
}
