package builtin

import (
	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// configurePods makes Pods delete gracefully, as Kubernetes' Pod strategy does: a Pod
// a kubelet may be running stays, being deleted, for its grace period (the store's
// Delete keeps it, and deletes it once a deletion's period is 0). Their defaults and
// validation are Kubernetes' (package kubesemantics); their subresources belong to
// podbinding, podeviction and podconnect.
func configurePods(res *registry.Resource) error {
	if res.Hooks == nil {
		res.Hooks = &registry.Hooks{}
	}
	res.Hooks.GracePeriod = podGracePeriod
	return nil
}

// podGracePeriod is a Pod's grace period on deletion, as kube's Pod strategy decides
// it: the period asked, else the Pod's spec.terminationGracePeriodSeconds, else 0;
// but 0 for a Pod on no node (nothing runs it) or one that has finished (phase
// Succeeded or Failed), and 1 for a negative one.
func podGracePeriod(pod *unstructured.Unstructured, requested *int64) int64 {
	var period int64
	if requested != nil {
		period = *requested
	} else if own, found, _ := unstructured.NestedInt64(pod.Object, "spec", "terminationGracePeriodSeconds"); found {
		period = own
	}
	if node, _, _ := unstructured.NestedString(pod.Object, "spec", "nodeName"); node == "" {
		period = 0
	}
	if phase, _, _ := unstructured.NestedString(pod.Object, "status", "phase"); phase == "Succeeded" || phase == "Failed" {
		period = 0
	}
	if period < 0 {
		return 1
	}
	return period
}
