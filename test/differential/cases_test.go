package differential

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"sort"
	"strings"
)

// Content types of the requests.
const (
	jsonType      = "application/json"
	mergeType     = "application/merge-patch+json"
	jsonPatchType = "application/json-patch+json"
	smpType       = "application/strategic-merge-patch+json"
	applyType     = "application/apply-patch+yaml"
)

// step is one request of a case; each step's answer is recorded.
type step struct {
	method, path, ctype string
	body                any
	// edit, when set, makes the body from the object the step before answered (a
	// copy, edit may change it); without one the step is not sent.
	edit func(prev map[string]any) any
}

// tcase is one case: its steps run in order, on objects no other case touches.
type tcase struct {
	// id is unique and stable: resource/seed/operation.
	id  string
	res resource
	// invalid says the case was generated to be refused (an invalid variant or a
	// forbidden change); kube-apiserver's answer decides what is right.
	invalid bool
	// global cases run after the others, one kind at a time (globalKinds).
	global bool
	steps  []step
	// cleanup is sent after the steps, not recorded.
	cleanup []step
}

// objName is the name of a case's object: stable, unique, a DNS-1035 label.
func objName(caseID string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(caseID))
	return fmt.Sprintf("x%010x", h.Sum64()>>24)
}

// objPath is the path of the object name of res in version v.
func objPath(res resource, v, name string) string { return res.collection(v) + "/" + name }

// deepCopy copies decoded JSON.
func deepCopy(obj map[string]any) map[string]any {
	data, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}

// prepare is a copy of s's object for the case caseID: its name, its namespace
// (and the seed's NAMESPACE placeholders) the case's, no server-set metadata.
func prepare(s seed, caseID string) (map[string]any, string) {
	obj := deepCopy(s.obj)
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	for _, k := range []string{"generateName", "resourceVersion", "uid", "creationTimestamp", "namespace", "selfLink"} {
		delete(meta, k)
	}
	ns := s.res.namespace()
	if ns != "" {
		meta["namespace"] = ns
	} else {
		ns = "default"
	}
	replaceStrings(obj, "NAMESPACE", ns)
	n := rename(obj, objName(caseID))
	if n == "" {
		delete(meta, "name")
	} else {
		meta["name"] = n
	}
	return obj, n
}

// reviews are the kinds that are answered, never stored: their metadata stays empty.
var reviews = map[string]bool{"SubjectAccessReview": true, "LocalSubjectAccessReview": true, "SelfSubjectAccessReview": true,
	"SelfSubjectRulesReview": true, "TokenReview": true, "SelfSubjectReview": true}

// rename gives the kinds whose names are made of their fields a name of n; reviews
// none.
func rename(obj map[string]any, n string) string {
	spec, _ := obj["spec"].(map[string]any)
	if reviews[fmt.Sprint(obj["kind"])] {
		return ""
	}
	switch obj["kind"] {
	case "CustomResourceDefinition":
		names, _ := spec["names"].(map[string]any)
		group := n + ".example.com"
		spec["group"] = group
		return fmt.Sprint(names["plural"]) + "." + group
	case "APIService":
		if v, ok := spec["version"].(string); ok {
			spec["group"] = n + ".example.com"
			return v + "." + n + ".example.com"
		}
	case "IPAddress":
		h := fnv.New32a()
		_, _ = h.Write([]byte(n))
		x := h.Sum32()
		return fmt.Sprintf("192.168.%d.%d", x>>8&0xff, x&0xff|1)
	case "ClusterTrustBundle":
		if signer, ok := spec["signerName"].(string); ok {
			return strings.ReplaceAll(signer, "/", ":") + ":" + n
		}
	}
	return n
}

func replaceStrings(v any, from, to string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if x == from {
				v[k] = to
			} else {
				replaceStrings(x, from, to)
			}
		}
	case []any:
		for i, x := range v {
			if x == from {
				v[i] = to
			} else {
				replaceStrings(x, from, to)
			}
		}
	}
}

// createIn creates obj through the version of its apiVersion.
func createIn(res resource, obj map[string]any) step {
	return step{method: http.MethodPost, path: res.collection(versionOf(res, obj)), ctype: jsonType, body: obj}
}

// versionOf is the version of obj's apiVersion (res's preferred one without one).
func versionOf(res resource, obj map[string]any) string {
	if av, _ := obj["apiVersion"].(string); av != "" {
		return av[strings.LastIndex(av, "/")+1:]
	}
	return res.versions[0]
}

// reads are a get of the object through every served version.
func reads(res resource, name string) []step {
	var out []step
	for _, v := range res.versions {
		out = append(out, step{method: http.MethodGet, path: objPath(res, v, name)})
	}
	return out
}

func patch(res resource, v, name, ctype string, body any, query string) step {
	return step{method: http.MethodPatch, path: objPath(res, v, name) + query, ctype: ctype, body: body}
}

// update is a put of the object the step before answered, changed by change. It is
// unconditional for the kinds whose status a controller writes meanwhile.
func update(res resource, v, name string, change func(obj map[string]any)) step {
	return step{method: http.MethodPut, path: objPath(res, v, name), ctype: jsonType,
		edit: func(prev map[string]any) any {
			change(prev)
			if meta, ok := prev["metadata"].(map[string]any); ok && asyncStatus[res.kind] {
				delete(meta, "resourceVersion")
			}
			return prev
		}}
}

func deleteStep(res resource, name string) step {
	return step{method: http.MethodDelete, path: objPath(res, res.versions[0], name)}
}

func setLabel(obj map[string]any, key, value string) {
	meta, _ := obj["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		meta["labels"] = labels
	}
	labels[key] = value
}

// allCases are every case, in a deterministic order: those of the seeds, then the
// special ones.
func allCases(seeds []seed) []tcase {
	var out []tcase
	for _, s := range seeds {
		out = append(out, seedCases(s)...)
	}
	out = append(out, specialCases()...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].id < out[j].id })
	for i := range out {
		out[i].global = globalKinds[out[i].res.kind]
	}
	return out
}

// seedCases are a seed's cases: the operations on it, its invalid variants and its
// changes on update.
func seedCases(s seed) []tcase {
	base := s.res.id() + "/" + s.id
	var out []tcase
	if s.res.verbs == createOnly {
		obj, _ := prepare(s, base+"/create")
		out = append(out, tcase{id: base + "/create", res: s.res, steps: []step{createIn(s.res, obj)}})
	} else {
		out = append(out, operationCases(s, base)...)
	}
	for _, v := range variants(s) {
		id := base + "/invalid/" + v.label
		obj, _ := prepare(s, id)
		v.apply(obj)
		out = append(out, tcase{id: id, res: s.res, invalid: true, steps: []step{createIn(s.res, obj)}})
	}
	if s.res.verbs == full {
		out = append(out, changeCases(s, base)...)
	}
	if s.res.name == "certificatesigningrequests" {
		out = append(out, approvalCases(s, base)...)
	}
	for i := range out {
		addCleanup(&out[i], s.res)
	}
	return out
}

// operationCases create the seed, read it through every version, update it, apply
// it (twice, then as a second manager) and patch it in the three patch types.
func operationCases(s seed, base string) []tcase {
	res := s.res
	var out []tcase
	obj, n := prepare(s, base+"/create")
	v := versionOf(res, obj)
	out = append(out, tcase{id: base + "/create", res: res, steps: append([]step{createIn(res, obj)}, reads(res, n)...)})

	// A deletion answers the object (deleted, or kept by its finalizers or grace
	// period) or a Status, as the resource's registry says.
	obj, n = prepare(s, base+"/delete")
	out = append(out, tcase{id: base + "/delete", res: res, steps: []step{createIn(res, obj), deleteStep(res, n)}})

	obj, n = prepare(s, base+"/update")
	out = append(out, tcase{id: base + "/update", res: res, steps: []step{createIn(res, obj),
		update(res, v, n, func(o map[string]any) { setLabel(o, "differential/updated", "yes") })}})

	obj, n = prepare(s, base+"/apply")
	setLabel(obj, "differential/owner", "a")
	byB := map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"],
		"metadata": map[string]any{"name": n, "labels": map[string]any{"differential/owner": "b", "differential/b": "yes"}}}
	addB := map[string]any{"apiVersion": obj["apiVersion"], "kind": obj["kind"],
		"metadata": map[string]any{"name": n, "labels": map[string]any{"differential/b": "yes"}}}
	out = append(out, tcase{id: base + "/apply", res: res, steps: []step{
		patch(res, v, n, applyType, obj, "?fieldManager=a"),
		patch(res, v, n, applyType, obj, "?fieldManager=a"),
		patch(res, v, n, applyType, addB, "?fieldManager=b"),
		patch(res, v, n, applyType, byB, "?fieldManager=b"),
		patch(res, v, n, applyType, byB, "?fieldManager=b&force=true"),
	}})

	obj, n = prepare(s, base+"/patch")
	out = append(out, tcase{id: base + "/patch", res: res, steps: []step{createIn(res, obj),
		patch(res, v, n, smpType, map[string]any{"metadata": map[string]any{"labels": map[string]any{"differential/smp": "yes"}}}, ""),
		patch(res, v, n, jsonPatchType, []any{
			map[string]any{"op": "test", "path": "/metadata/name", "value": n},
			map[string]any{"op": "add", "path": "/metadata/labels/differential~1json", "value": "yes"},
		}, ""),
		patch(res, v, n, mergeType, map[string]any{"metadata": map[string]any{"labels": map[string]any{"differential/smp": nil, "differential/merge": "yes"}}}, ""),
		patch(res, v, n, jsonPatchType, []any{map[string]any{"op": "test", "path": "/metadata/name", "value": "other"}}, ""),
		patch(res, v, n, smpType, map[string]any{"metadata": map[string]any{"name": "renamed"}}, ""),
	}})
	return out
}

// changeCases create the seed, then put it back with one field changed: immutable
// fields and forbidden transitions are refused, the rest accepted.
func changeCases(s seed, base string) []tcase {
	var out []tcase
	for _, c := range changes(s) {
		id := base + "/change/" + c.label
		obj, n := prepare(s, id)
		out = append(out, tcase{id: id, res: s.res, invalid: true, steps: []step{createIn(s.res, obj), update(s.res, versionOf(s.res, obj), n, c.apply)}})
	}
	return out
}

// addCleanup deletes, after a global case, what it may have created.
func addCleanup(c *tcase, res resource) {
	if !globalKinds[res.kind] || len(c.steps) == 0 {
		return
	}
	first := c.steps[0]
	obj, ok := first.body.(map[string]any)
	if !ok {
		return
	}
	meta, _ := obj["metadata"].(map[string]any)
	if n, ok := meta["name"].(string); ok && n != "" {
		c.cleanup = append(c.cleanup, deleteStep(res, n))
	}
}

// specialCases are the cases of the resources no seed fits: bindings (of a pod the
// case creates first), componentstatuses (read only), Pods' subresources, the proxy
// subresources and Events across their two groups.
func specialCases() []tcase {
	var out []tcase
	for _, r := range resources {
		switch r.name {
		case "bindings":
			out = append(out, bindingCases(r)...)
		case "pods":
			out = append(out, podSubresourceCases(r)...)
			out = append(out, podProxyCases(podRig{r: r, pods: r.collection("v1")})...)
		case "services":
			out = append(out, serviceProxyCases(r)...)
		case "nodes":
			out = append(out, nodeProxyCases(r)...)
		case "events":
			if r.group == "" {
				out = append(out, sharedEventCases(r)...)
			}
		case "componentstatuses":
			base := r.id() + "/reads/"
			for _, n := range []string{"etcd-0", "scheduler", "controller-manager", "nosuch"} {
				out = append(out, tcase{id: base + n, res: r, steps: []step{{method: http.MethodGet, path: objPath(r, "v1", n)}}})
			}
			out = append(out, tcase{id: base + "list", res: r, steps: []step{{method: http.MethodGet, path: r.collection("v1")}}})
		}
	}
	return out
}

// bindingCases bind a pod the case creates to a node, through the bindings resource
// and the pod's binding subresource, then read the pod; the invalid variants of the
// binding are posted the same way.
func bindingCases(r resource) []tcase {
	binding := seed{id: "written/binding", res: r, obj: map[string]any{"apiVersion": "v1", "kind": "Binding",
		"metadata": map[string]any{"name": "b"}, "target": map[string]any{"apiVersion": "v1", "kind": "Node", "name": "node-1"}}}
	pod := func(n string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": n, "namespace": r.namespace()},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "registry.k8s.io/pause:3.10"}}}}
	}
	pods := "/api/v1/namespaces/" + r.namespace() + "/pods"
	podsIn := func(n string) string { return pods + "/" + n }
	base := r.id() + "/" + binding.id
	var out []tcase
	for _, sub := range []bool{false, true} {
		id := base + "/create"
		path := r.collection("v1")
		if sub {
			id = base + "/subresource"
		}
		obj, n := prepare(binding, id)
		if sub {
			path = podsIn(n) + "/binding"
		}
		out = append(out, tcase{id: id, res: r, steps: []step{
			{method: http.MethodPost, path: pods, ctype: jsonType, body: pod(n)},
			{method: http.MethodPost, path: path, ctype: jsonType, body: obj},
			{method: http.MethodGet, path: podsIn(n)},
		}})
	}
	for _, v := range variants(binding) {
		id := base + "/invalid/" + v.label
		obj, n := prepare(binding, id)
		v.apply(obj)
		out = append(out, tcase{id: id, res: r, invalid: true, steps: []step{
			{method: http.MethodPost, path: pods, ctype: jsonType, body: pod(n)},
			{method: http.MethodPost, path: r.collection("v1"), ctype: jsonType, body: obj},
		}})
	}
	return out
}
