package differential

import (
	"net/http"
)

// The cases of the subresources that act on an object rather than store one: a Pod's
// eviction (with and without PodDisruptionBudgets), ephemeralcontainers and resize,
// log, exec, attach and portforward (as answered with no kubelet to reach), and a
// CertificateSigningRequest's approval.

// podRig makes the requests of the Pod cases of resource r (pods).
type podRig struct {
	r    resource
	pods string // the collection
}

func (g podRig) path(n, sub string) string {
	if sub == "" {
		return g.pods + "/" + n
	}
	return g.pods + "/" + n + "/" + sub
}

// create makes the Pod n with containers (name=image), labelled app=n, on node
// (none if "").
func (g podRig) create(n, node string, containers ...map[string]any) step {
	if len(containers) == 0 {
		containers = []map[string]any{{"name": "c", "image": "registry.k8s.io/pause:3.10"}}
	}
	list := make([]any, len(containers))
	for i, c := range containers {
		list[i] = c
	}
	spec := map[string]any{"containers": list}
	if node != "" {
		spec["nodeName"] = node
	}
	return step{method: http.MethodPost, path: g.pods, ctype: jsonType, body: map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": n, "namespace": g.r.namespace(), "labels": map[string]any{"app": n}}, "spec": spec}}
}

// running makes the Pod n Running, and Ready if ready.
func (g podRig) running(n string, ready bool) step {
	status := map[string]any{"phase": "Running"}
	if ready {
		status["conditions"] = []any{map[string]any{"type": "Ready", "status": "True"}}
	}
	return step{method: http.MethodPatch, path: g.path(n, "status"), ctype: mergeType, body: map[string]any{"status": status}}
}

// budgets is the collection of PodDisruptionBudgets beside the Pods.
func (g podRig) budgets() string {
	return "/apis/policy/v1/namespaces/" + g.r.namespace() + "/poddisruptionbudgets"
}

// budget makes the PodDisruptionBudget b of the Pod n.
func (g podRig) budget(b, n string) step {
	return step{method: http.MethodPost, path: g.budgets(), ctype: jsonType, body: map[string]any{"apiVersion": "policy/v1",
		"kind": "PodDisruptionBudget", "metadata": map[string]any{"name": b},
		"spec": map[string]any{"minAvailable": 1, "selector": map[string]any{"matchLabels": map[string]any{"app": n}}}}}
}

// budgetStatus writes b's status as a disruption controller would: observed, with
// allowed disruptions and the healthy Pods it has and wants.
func (g podRig) budgetStatus(b string, allowed, current, desired int) step {
	return step{method: http.MethodPatch, path: g.budgets() + "/" + b + "/status", ctype: mergeType, body: map[string]any{"status": map[string]any{
		"observedGeneration": 1, "disruptionsAllowed": allowed, "currentHealthy": current, "desiredHealthy": desired, "expectedPods": 1}}}
}

// evict posts an Eviction of the Pod n (named name in the body), with query and
// deleteOptions (nil: none).
func (g podRig) evict(n, name, apiVersion, query string, deleteOptions map[string]any) step {
	body := map[string]any{"apiVersion": apiVersion, "kind": "Eviction", "metadata": map[string]any{"name": name}}
	if deleteOptions != nil {
		body["deleteOptions"] = deleteOptions
	}
	return step{method: http.MethodPost, path: g.path(n, "eviction") + query, ctype: jsonType, body: body}
}

func (g podRig) get(n, sub string) step { return step{method: http.MethodGet, path: g.path(n, sub)} }

// podSubresourceCases are the cases of Pods' subresources.
func podSubresourceCases(r resource) []tcase {
	g := podRig{r: r, pods: r.collection("v1")}
	var out []tcase
	for _, c := range [][]tcase{deletionCases(g), evictionCases(g), ephemeralCases(g), resizeCases(g), connectCases(g), nodeConnectCases(g)} {
		out = append(out, c...)
	}
	return out
}

// remove deletes the Pod n with the DeleteOptions opts (nil: no body) and query.
func (g podRig) remove(n, query string, opts map[string]any) step {
	st := step{method: http.MethodDelete, path: g.path(n, "") + query}
	if opts != nil {
		st.ctype, st.body = jsonType, opts
	}
	return st
}

// deletionCases delete Pods gracefully and not: on no node, on one (with the Pod's
// default period, its own, the request's, shortened, lengthened, negative, 0), once
// finished, with a finalizer, in a dry run, and through an eviction's options.
func deletionCases(g podRig) []tcase {
	base := g.r.id() + "/deletion/"
	grace := func(seconds int) map[string]any { return map[string]any{"gracePeriodSeconds": seconds} }
	cases := []struct {
		label string
		steps func(n string) []step
	}{
		{"unscheduled", func(n string) []step { return []step{g.create(n, ""), g.remove(n, "", nil), g.get(n, "")} }},
		{"scheduled", func(n string) []step {
			return []step{g.create(n, "node-1"), g.remove(n, "", nil), g.get(n, ""), g.remove(n, "", grace(60)),
				g.remove(n, "", grace(10)), g.get(n, ""), g.remove(n, "", grace(0)), g.get(n, "")}
		}},
		{"scheduled-negative", func(n string) []step {
			return []step{g.create(n, "node-1"), g.remove(n, "", grace(-5)), g.get(n, "")}
		}},
		{"scheduled-own-period", func(n string) []step {
			create := g.create(n, "node-1")
			create.body.(map[string]any)["spec"].(map[string]any)["terminationGracePeriodSeconds"] = 7
			return []step{create, g.remove(n, "", nil), g.get(n, "")}
		}},
		{"scheduled-dry-run", func(n string) []step {
			// A deletion's body is its options: the query's are read only without one.
			dry := map[string]any{"gracePeriodSeconds": 0, "dryRun": []any{"All"}}
			return []step{g.create(n, "node-1"), g.remove(n, "", dry), g.get(n, ""), g.remove(n, "?dryRun=All", nil), g.get(n, ""),
				g.remove(n, "", nil), g.remove(n, "", dry), g.get(n, "")}
		}},
		{"uid-precondition", func(n string) []step {
			return []step{g.create(n, "node-1"), g.remove(n, "", map[string]any{"preconditions": map[string]any{"uid": "00000000-0000-0000-0000-000000000000"}}), g.get(n, "")}
		}},
		{"resource-version-precondition", func(n string) []step {
			return []step{g.create(n, ""), g.remove(n, "", map[string]any{"preconditions": map[string]any{"resourceVersion": "1"}}), g.get(n, "")}
		}},
		{"query-ignored-with-a-body", func(n string) []step {
			return []step{g.create(n, "node-1"), g.remove(n, "?dryRun=All", grace(0)), g.get(n, "")}
		}},
		{"succeeded", func(n string) []step {
			return []step{g.create(n, "node-1"), {method: http.MethodPatch, path: g.path(n, "status"), ctype: mergeType,
				body: map[string]any{"status": map[string]any{"phase": "Succeeded"}}}, g.remove(n, "", grace(30)), g.get(n, "")}
		}},
		{"finalizer", func(n string) []step {
			create := g.create(n, "node-1")
			create.body.(map[string]any)["metadata"].(map[string]any)["finalizers"] = []any{"example.com/hold"}
			return []step{create, g.remove(n, "", grace(0)), g.get(n, ""),
				{method: http.MethodPatch, path: g.path(n, ""), ctype: mergeType, body: map[string]any{"metadata": map[string]any{"finalizers": nil}}},
				g.get(n, "")}
		}},
		{"finalizer-within-grace", func(n string) []step {
			create := g.create(n, "node-1")
			create.body.(map[string]any)["metadata"].(map[string]any)["finalizers"] = []any{"example.com/hold"}
			return []step{create, g.remove(n, "", nil),
				{method: http.MethodPatch, path: g.path(n, ""), ctype: mergeType, body: map[string]any{"metadata": map[string]any{"finalizers": nil}}},
				g.get(n, ""), g.remove(n, "", grace(0)), g.get(n, "")}
		}},
		{"eviction-grace", func(n string) []step {
			return []step{g.create(n, "node-1"), g.running(n, true), g.evict(n, n, "policy/v1", "", grace(5)), g.get(n, "")}
		}},
	}
	out := make([]tcase, 0, len(cases))
	for _, c := range cases {
		id := base + c.label
		n := objName(id)
		out = append(out, tcase{id: id, res: g.r, steps: c.steps(n), cleanup: []step{g.remove(n, "", grace(0))}})
	}
	return out
}

// evictionCases evict Pods: Pending ones, missing ones, and Running ones under
// budgets that allow it or not.
func evictionCases(g podRig) []tcase {
	base := g.r.id() + "/eviction/"
	type evcase struct {
		label   string
		invalid bool
		steps   func(n string) []step
	}
	plain := func(query string, opts map[string]any) func(n string) []step {
		return func(n string) []step {
			return []step{g.create(n, ""), g.evict(n, n, "policy/v1", query, opts), g.get(n, "")}
		}
	}
	budgeted := func(ready bool, status []int, query string) func(n string) []step {
		return func(n string) []step {
			steps := []step{g.create(n, ""), g.running(n, ready), g.budget(n, n)}
			if status != nil {
				steps = append(steps, g.budgetStatus(n, status[0], status[1], status[2]))
			}
			return append(steps, g.evict(n, n, "policy/v1", query, nil), g.get(n, ""),
				step{method: http.MethodGet, path: g.budgets() + "/" + n})
		}
	}
	cases := []evcase{
		{"pending", false, plain("", nil)},
		{"pending-dry-run", false, plain("?dryRun=All", nil)},
		{"pending-dry-run-in-body", false, plain("", map[string]any{"dryRun": []any{"All"}})},
		{"uid-precondition", true, plain("", map[string]any{"preconditions": map[string]any{"uid": "00000000-0000-0000-0000-000000000000"}})},
		{"bad-propagation", true, plain("", map[string]any{"propagationPolicy": "Sometimes"})},
		{"dry-run-disagrees", true, plain("?dryRun=All", map[string]any{"dryRun": []any{"Never"}})},
		{"ignore-store-read-error", true, plain("", map[string]any{"ignoreStoreReadErrorWithClusterBreakingPotential": true})},
		{"v1beta1", false, func(n string) []step {
			return []step{g.create(n, ""), g.evict(n, n, "policy/v1beta1", "", nil), g.get(n, "")}
		}},
		{"missing-pod", true, func(n string) []step { return []step{g.evict(n, n, "policy/v1", "", nil)} }},
		{"body-of-another-kind", true, func(n string) []step {
			return []step{g.create(n, ""), {method: http.MethodPost, path: g.path(n, "eviction"), ctype: jsonType,
				body: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": n}}}, g.get(n, "")}
		}},
		{"body-without-kind", false, func(n string) []step {
			return []step{g.create(n, ""), {method: http.MethodPost, path: g.path(n, "eviction"), ctype: jsonType,
				body: map[string]any{"metadata": map[string]any{"name": n}}}, g.get(n, "")}
		}},
		{"name-mismatch", true, func(n string) []step {
			return []step{g.create(n, ""), g.evict(n, "other", "policy/v1", "", nil), g.get(n, "")}
		}},
		{"no-budget", false, func(n string) []step {
			return []step{g.create(n, ""), g.running(n, true), g.evict(n, n, "policy/v1", "", nil), g.get(n, "")}
		}},
		{"budget-unobserved", true, budgeted(true, nil, "")},
		{"budget-exhausted", true, budgeted(true, []int{0, 1, 1}, "")},
		{"budget-unready-pod-spared", false, budgeted(false, []int{0, 1, 1}, "")},
		{"budget-allows", false, budgeted(true, []int{1, 1, 0}, "")},
		{"budget-allows-dry-run", false, budgeted(true, []int{1, 1, 0}, "?dryRun=All")},
		{"two-budgets", true, func(n string) []step {
			return []step{g.create(n, ""), g.running(n, true), g.budget(n, n), g.budget(n+"-2", n),
				g.evict(n, n, "policy/v1", "", nil), g.get(n, "")}
		}},
	}
	out := make([]tcase, 0, len(cases))
	for _, c := range cases {
		id := base + c.label
		out = append(out, tcase{id: id, res: g.r, invalid: c.invalid, steps: c.steps(objName(id))})
	}
	return out
}

// ephemeralCases add ephemeral containers to a Pod through its ephemeralcontainers
// subresource, valid and not.
func ephemeralCases(g podRig) []tcase {
	base := g.r.id() + "/ephemeralcontainers/"
	debug := func(name string, more map[string]any) map[string]any {
		c := map[string]any{"name": name, "image": "busybox", "targetContainerName": "c", "stdin": true, "tty": true}
		for k, v := range more {
			c[k] = v
		}
		return map[string]any{"spec": map[string]any{"ephemeralContainers": []any{c}}}
	}
	patches := []struct {
		label   string
		invalid bool
		ctype   string
		body    any
	}{
		{"add", false, smpType, debug("debug", nil)},
		{"add-merge", false, mergeType, debug("debug", nil)},
		{"bad-name", true, smpType, debug("Debug_1", nil)},
		{"name-of-a-container", true, smpType, debug("c", nil)},
		{"ports", true, smpType, debug("debug", map[string]any{"ports": []any{map[string]any{"containerPort": 80}}})},
		{"other-fields-ignored", false, mergeType, map[string]any{"metadata": map[string]any{"labels": map[string]any{"x": "y"}},
			"spec": map[string]any{"activeDeadlineSeconds": 5}}},
	}
	var out []tcase
	for _, p := range patches {
		id := base + p.label
		n := objName(id)
		out = append(out, tcase{id: id, res: g.r, invalid: p.invalid, steps: []step{g.create(n, ""), g.get(n, "ephemeralcontainers"),
			{method: http.MethodPatch, path: g.path(n, "ephemeralcontainers"), ctype: p.ctype, body: p.body}, g.get(n, "")}})
	}
	id := base + "remove"
	n := objName(id)
	out = append(out, tcase{id: id, res: g.r, invalid: true, steps: []step{g.create(n, ""),
		{method: http.MethodPatch, path: g.path(n, "ephemeralcontainers"), ctype: smpType, body: debug("debug", nil)},
		{method: http.MethodPatch, path: g.path(n, "ephemeralcontainers"), ctype: mergeType,
			body: map[string]any{"spec": map[string]any{"ephemeralContainers": []any{}}}}}})
	id = base + "put"
	n = objName(id)
	out = append(out, tcase{id: id, res: g.r, steps: []step{g.create(n, ""), g.get(n, "ephemeralcontainers"),
		{method: http.MethodPut, path: g.path(n, "ephemeralcontainers"), ctype: jsonType, edit: func(prev map[string]any) any {
			spec, _ := prev["spec"].(map[string]any)
			spec["ephemeralContainers"] = []any{map[string]any{"name": "debug", "image": "busybox"}}
			return prev
		}}}})
	return out
}

// resizeCases change a Pod's resources through its resize subresource, valid and not.
func resizeCases(g podRig) []tcase {
	base := g.r.id() + "/resize/"
	sized := map[string]any{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": map[string]any{
		"requests": map[string]any{"cpu": "100m", "memory": "64Mi"}, "limits": map[string]any{"cpu": "200m", "memory": "64Mi"}}}
	resources := func(rs map[string]any) map[string]any {
		return map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "resources": rs}}}}
	}
	patches := []struct {
		label      string
		invalid    bool
		bestEffort bool
		ctype      string
		body       any
	}{
		{"cpu", false, false, smpType, resources(map[string]any{"requests": map[string]any{"cpu": "150m"}})},
		{"requests-above-limits", true, false, smpType, resources(map[string]any{"requests": map[string]any{"cpu": "500m"}})},
		{"memory", false, false, smpType, resources(map[string]any{"requests": map[string]any{"memory": "32Mi"}, "limits": map[string]any{"memory": "32Mi"}})},
		{"image-ignored", false, false, smpType, map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "other",
			"resources": map[string]any{"limits": map[string]any{"cpu": "300m"}}}}}}},
		{"resize-policy", false, false, smpType, map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c",
			"resizePolicy": []any{map[string]any{"resourceName": "cpu", "restartPolicy": "RestartContainer"}}}}}}},
		{"qos-change", true, true, smpType, resources(map[string]any{"requests": map[string]any{"cpu": "100m"}})},
		{"add-container", true, false, jsonPatchType, []any{map[string]any{"op": "add", "path": "/spec/containers/-",
			"value": map[string]any{"name": "d", "image": "registry.k8s.io/pause:3.10"}}}},
	}
	var out []tcase
	for _, p := range patches {
		id := base + p.label
		n := objName(id)
		create := g.create(n, "", sized)
		if p.bestEffort {
			create = g.create(n, "")
		}
		out = append(out, tcase{id: id, res: g.r, invalid: p.invalid, steps: []step{create, g.get(n, "resize"),
			{method: http.MethodPatch, path: g.path(n, "resize"), ctype: p.ctype, body: p.body}, g.get(n, "")}})
	}
	return out
}

// connectCases read the log of, and exec, attach and port-forward to, Pods on no
// node, and check the options and containers kube checks first.
func connectCases(g podRig) []tcase {
	base := g.r.id() + "/connect/"
	two := []map[string]any{{"name": "a", "image": "registry.k8s.io/pause:3.10"}, {"name": "b", "image": "registry.k8s.io/pause:3.10"}}
	requests := []struct {
		label, method, sub, query string
		several                   bool
	}{
		{"log", http.MethodGet, "log", "", false},
		{"log-tail", http.MethodGet, "log", "?tailLines=10&timestamps=true", false},
		{"log-negative-tail", http.MethodGet, "log", "?tailLines=-1", false},
		{"log-since-both", http.MethodGet, "log", "?sinceSeconds=5&sinceTime=2020-01-01T00:00:00Z", false},
		{"log-bad-number", http.MethodGet, "log", "?limitBytes=many", false},
		{"log-unknown-container", http.MethodGet, "log", "?container=zz", false},
		{"log-choose-container", http.MethodGet, "log", "", true},
		{"log-chosen-container", http.MethodGet, "log", "?container=b", true},
		{"log-post", http.MethodPost, "log", "", false},
		{"exec", http.MethodPost, "exec", "?command=ls&stdout=true", false},
		{"exec-get", http.MethodGet, "exec", "?command=ls&stdout=true", false},
		{"exec-put", http.MethodPut, "exec", "", false},
		{"exec-unknown-container", http.MethodPost, "exec", "?command=ls&container=zz", false},
		{"exec-choose-container", http.MethodPost, "exec", "?command=ls", true},
		{"attach", http.MethodPost, "attach", "?stdout=true", false},
		{"attach-choose-container", http.MethodGet, "attach", "?stdout=true", true},
		{"portforward", http.MethodPost, "portforward", "?ports=80", false},
		{"portforward-bad-port", http.MethodPost, "portforward", "?ports=http", false},
		{"portforward-several-containers", http.MethodGet, "portforward", "", true},
	}
	var out []tcase
	for _, q := range requests {
		id := base + q.label
		n := objName(id)
		create := g.create(n, "")
		if q.several {
			create = g.create(n, "", two...)
		}
		out = append(out, tcase{id: id, res: g.r, invalid: q.label != "log" && q.label != "log-tail" && q.label != "log-chosen-container",
			steps: []step{create, {method: q.method, path: g.path(n, q.sub) + q.query}}})
	}
	id := base + "missing-pod"
	n := objName(id)
	out = append(out, tcase{id: id, res: g.r, invalid: true, steps: []step{g.get(n, "log"), {method: http.MethodPost, path: g.path(n, "exec") + "?command=ls"}}})
	return out
}

// nodeConnectCases read the log of, and exec into, Pods assigned to a node that does
// not exist, to one without addresses and to one whose kubelet is not listening.
func nodeConnectCases(g podRig) []tcase {
	base := g.r.id() + "/connect-node/"
	nodes := "/api/v1/nodes"
	node := func(n string) step {
		return step{method: http.MethodPost, path: nodes, ctype: jsonType, body: map[string]any{"apiVersion": "v1", "kind": "Node",
			"metadata": map[string]any{"name": n}}}
	}
	unreachable := func(n string) step {
		return step{method: http.MethodPatch, path: nodes + "/" + n + "/status", ctype: mergeType, body: map[string]any{"status": map[string]any{
			"addresses":       []any{map[string]any{"type": "InternalIP", "address": "127.0.0.1"}},
			"daemonEndpoints": map[string]any{"kubeletEndpoint": map[string]any{"Port": 1}}}}}
	}
	connects := func(n string) []step {
		return []step{g.get(n, "log"), {method: http.MethodPost, path: g.path(n, "exec") + "?command=ls&stdout=true"},
			{method: http.MethodGet, path: g.path(n, "attach") + "?stdout=true"}, {method: http.MethodPost, path: g.path(n, "portforward") + "?ports=80"}}
	}
	var out []tcase
	id := base + "missing"
	n := objName(id)
	out = append(out, tcase{id: id, res: g.r, invalid: true, steps: append([]step{g.create(n, n)}, connects(n)...)})
	for _, label := range []string{"no-address", "unreachable"} {
		id := base + label
		n := objName(id)
		steps := []step{node(n)}
		if label == "unreachable" {
			steps = append(steps, unreachable(n))
		}
		steps = append(append(steps, g.create(n, n)), connects(n)...)
		out = append(out, tcase{id: id, res: g.r, invalid: true, steps: steps,
			cleanup: []step{{method: http.MethodDelete, path: nodes + "/" + n}}})
	}
	return out
}

// approvalCases approve and deny the seed's CertificateSigningRequest through its
// approval subresource, and set conditions the subresource refuses.
func approvalCases(s seed, base string) []tcase {
	condition := func(t, status string) map[string]any {
		return map[string]any{"type": t, "status": status, "reason": "Differential", "message": "by the differential suite"}
	}
	changes := []struct {
		label      string
		invalid    bool
		conditions []any
	}{
		{"approve", false, []any{condition("Approved", "True")}},
		{"deny", false, []any{condition("Denied", "True")}},
		{"approve-and-deny", true, []any{condition("Approved", "True"), condition("Denied", "True")}},
		{"bad-status", true, []any{condition("Approved", "Maybe")}},
	}
	var out []tcase
	for _, c := range changes {
		id := base + "/approval/" + c.label
		obj, n := prepare(s, id)
		v := versionOf(s.res, obj)
		out = append(out, tcase{id: id, res: s.res, invalid: c.invalid, steps: []step{createIn(s.res, obj),
			{method: http.MethodPut, path: objPath(s.res, v, n) + "/approval", ctype: jsonType, edit: func(prev map[string]any) any {
				prev["status"] = map[string]any{"conditions": c.conditions}
				return prev
			}},
			{method: http.MethodGet, path: objPath(s.res, v, n)},
		}})
	}
	return out
}
