package kubesemantics

import (
	"testing"

	"k8s.io/kubernetes/pkg/apis/core"
)

func TestNodes(t *testing.T) {
	r := unserved(t, "nodes", "Node", false, true)
	status := map[string]any{"capacity": map[string]any{"cpu": "4"}, "config": map[string]any{"error": "x"}, "addresses": []any{map[string]any{"type": "InternalIP", "address": "10.0.0.5"}}}
	n := coreMustCreate(t, r, "v1", map[string]any{"metadata": meta("node-1", ""),
		"spec":   map[string]any{"podCIDRs": []any{"10.244.1.0/24"}, "configSource": map[string]any{"configMap": map[string]any{"name": "c", "namespace": "kube-system", "kubeletConfigKey": "k"}}},
		"status": status})
	if str(n, "status", "capacity", "cpu") != "4" || has(n, "status", "config") || has(n, "spec", "configSource") {
		t.Errorf("a new Node keeps its status but the removed kubelet configuration: %v", n.Object)
	}
	if str(n, "spec", "podCIDR") != "10.244.1.0/24" || n.GetGeneration() != 0 {
		t.Errorf("podCIDR %q (the first podCIDR, defaulted), generation %d", str(n, "spec", "podCIDR"), n.GetGeneration())
	}
	res := coreCreate(t, r, "v1", map[string]any{"metadata": meta("node-2", ""), "spec": map[string]any{"podCIDRs": []any{"bad"},
		"taints": []any{map[string]any{"key": "k", "effect": "Sometimes"}}}})
	wantErrs(t, res.errs, fieldErr{invalid, "spec.podCIDRs[0]"}, fieldErr{notSupported, "metadata.taints[0].effect"})
	res = coreCreate(t, r, "v1", map[string]any{"metadata": meta("node-3", ""), "spec": map[string]any{"externalID": "i-123"}})
	if len(res.errs) > 0 || !containsWarning(res.warnings, "spec.externalID") {
		t.Errorf("errors %v, warnings %v", res.errs, res.warnings)
	}

	changed := edit(n, func(o map[string]any) {
		o["spec"].(map[string]any)["unschedulable"] = true
		o["status"].(map[string]any)["capacity"] = map[string]any{"cpu": "8"}
	})
	res = coreUpdate(t, r, "v1", "", changed, n)
	if len(res.errs) > 0 || str(res.obj, "status", "capacity", "cpu") != "4" || !has(res.obj, "spec", "unschedulable") {
		t.Errorf("an update: %v, %v", res.errs, res.obj.Object)
	}
	res = coreUpdate(t, r, "v1", "status", changed, n)
	if len(res.errs) > 0 || str(res.obj, "status", "capacity", "cpu") != "8" || has(res.obj, "spec", "unschedulable") {
		t.Errorf("a status update: %v, %v", res.errs, res.obj.Object)
	}
	res = coreUpdate(t, r, "v1", "", edit(n, func(o map[string]any) {
		o["spec"].(map[string]any)["podCIDRs"] = []any{"10.244.2.0/24"}
		o["spec"].(map[string]any)["podCIDR"] = "10.244.2.0/24"
	}), n)
	wantErrs(t, res.errs, fieldErr{forbidden, "spec.podCIDRs"})
}

// The dynamic kubelet configuration is gone: a Node may keep what it had, never set it.
//
//nolint:staticcheck // the removed field is what is tested
func TestDropDisabledNodeFields(t *testing.T) {
	source := &core.NodeConfigSource{ConfigMap: &core.ConfigMapNodeConfigSource{Name: "c"}}
	n := &core.Node{Spec: core.NodeSpec{ConfigSource: source}, Status: core.NodeStatus{Config: &core.NodeConfigStatus{}}}
	dropDisabledNodeFields(n, nil)
	if n.Spec.ConfigSource != nil || n.Status.Config != nil {
		t.Error("a new Node keeps its configSource")
	}
	n.Spec.ConfigSource = source
	dropDisabledNodeFields(n, &core.Node{})
	if n.Spec.ConfigSource != nil {
		t.Error("an update sets a configSource")
	}
	n.Spec.ConfigSource = source
	dropDisabledNodeFields(n, &core.Node{Spec: core.NodeSpec{ConfigSource: source}})
	if n.Spec.ConfigSource == nil {
		t.Error("an update drops the configSource the Node had")
	}
	old := &core.Node{Status: core.NodeStatus{Config: &core.NodeConfigStatus{}}}
	n.Status.Config = &core.NodeConfigStatus{Error: "e"}
	prepareNodeStatus(t.Context(), n, old)
	if n.Status.Config == nil || n.Spec.ConfigSource != nil {
		t.Errorf("a status update of a Node that had a config status: config %v, spec %v", n.Status.Config, n.Spec)
	}
}
