package podbinding

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/concordproject/concord/kubesemantics"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/features"
)

// The resources: Pods, and Bindings (core/v1).
var (
	Pods     = schema.GroupResource{Resource: "pods"}
	Bindings = schema.GroupResource{Resource: "bindings"}

	bindingKind = schema.GroupVersionKind{Version: "v1", Kind: "Binding"}
	podBinding  = schema.GroupResource{Resource: "pods/binding"}
)

// Binder binds the Pods of a registry's store.
type Binder struct {
	reg   *registry.Registry
	store *store.Store
	sem   *kubesemantics.Semantics
}

// New returns the Binder of the Pods reg serves from st, with kube's validation of
// Bindings (sem).
func New(reg *registry.Registry, st *store.Store, sem *kubesemantics.Semantics) *Binder {
	return &Binder{reg: reg, store: st, sem: sem}
}

// ConfigurePods gives Pods their binding subresource.
func (b *Binder) ConfigurePods(res *registry.Resource) error {
	res.AddAction("binding", registry.Action{Kind: bindingKind,
		Do: func(ctx context.Context, pod *unstructured.Unstructured, body []byte, dryRun bool) (runtime.Object, error) {
			binding := &unstructured.Unstructured{}
			if err := json.Unmarshal(body, &binding.Object); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is not a Binding: %v", err))
			}
			return b.Bind(ctx, pod.GetNamespace(), binding, dryRun)
		}})
	return nil
}

// ConfigureBindings makes the bindings resource bind the Pods its objects name.
func (b *Binder) ConfigureBindings(res *registry.Resource) error {
	if res.Hooks == nil {
		res.Hooks = &registry.Hooks{}
	}
	for i := range res.Versions {
		res.Versions[i].Subresources = nil
	}
	res.Hooks.Review = func(ctx context.Context, binding *unstructured.Unstructured, dryRun bool) (*unstructured.Unstructured, error) {
		if binding.GetName() == "" {
			return nil, apierrors.NewBadRequest("Name parameter required.")
		}
		// kube's create handler wipes a created object's system fields: no uid or
		// resourceVersion precondition here (the subresource keeps them).
		binding.SetUID("")
		binding.SetResourceVersion("")
		status, err := b.Bind(ctx, binding.GetNamespace(), binding, dryRun)
		if err != nil {
			return nil, err
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		return &unstructured.Unstructured{Object: m}, nil
	}
	return nil
}

// Bind assigns the Pod binding names, in namespace, to binding's target node, and
// answers Success; with dryRun it writes nothing.
func (b *Binder) Bind(ctx context.Context, namespace string, binding *unstructured.Unstructured, dryRun bool) (*metav1.Status, error) {
	if err := b.sem.ValidateBinding(binding); err != nil {
		// kube-apiserver answers its binding's validation errors as an unknown error.
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
			Code: http.StatusInternalServerError, Message: err.Error()}}
	}
	res := b.reg.Served(Pods, "v1")
	if res == nil {
		return nil, apierrors.NewNotFound(Pods, binding.GetName())
	}
	node, _, _ := unstructured.NestedString(binding.Object, "target", "name")
	_, _, err := b.store.Update(ctx, store.Ref{Resource: res, Version: "v1", Namespace: namespace, Name: binding.GetName()},
		func(_ context.Context, pod *unstructured.Unstructured) (*unstructured.Unstructured, error) {
			if err := b.assign(pod, binding, node); err != nil {
				return nil, apierrors.NewConflict(podBinding, binding.GetName(), err)
			}
			return pod, nil
		}, store.UpdateOptions{WriteOptions: store.WriteOptions{Subresource: "binding", DryRun: dryRun}})
	if err != nil {
		return nil, err
	}
	return &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusSuccess, Code: http.StatusCreated}, nil
}

// assign sets pod's node, binding's annotations (and labels) and the PodScheduled
// condition, and clears its nominated node, as kube's binding does under the
// server's gates, or says why pod cannot be bound.
func (b *Binder) assign(pod, binding *unstructured.Unstructured, node string) error {
	switch uid, rv := binding.GetUID(), binding.GetResourceVersion(); {
	case pod.GetDeletionTimestamp() != nil:
		return fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.GetName())
	case uid != "" && uid != pod.GetUID():
		return fmt.Errorf("the uid of the Binding (%s) is not the pod's (%s)", uid, pod.GetUID())
	case rv != "" && rv != pod.GetResourceVersion():
		return fmt.Errorf("the resourceVersion of the Binding (%s) is not the pod's (%s)", rv, pod.GetResourceVersion())
	}
	if assigned, _, _ := unstructured.NestedString(pod.Object, "spec", "nodeName"); assigned != "" {
		return fmt.Errorf("pod %v is already assigned to node %q", pod.GetName(), assigned)
	}
	if gates, _, _ := unstructured.NestedSlice(pod.Object, "spec", "schedulingGates"); len(gates) > 0 {
		return fmt.Errorf("pod %v has non-empty .spec.schedulingGates", pod.GetName())
	}
	_ = unstructured.SetNestedField(pod.Object, node, "spec", "nodeName")
	gate := b.sem.FeatureGate()
	if gate.Enabled(features.ClearingNominatedNodeNameAfterBinding) {
		unstructured.RemoveNestedField(pod.Object, "status", "nominatedNodeName")
	}
	annotations := pod.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	maps.Copy(annotations, binding.GetAnnotations())
	podutil.DropInitContainerAnnotations(annotations)
	if len(annotations) == 0 {
		annotations = nil // none, as kube's Pod writes an empty map
	}
	pod.SetAnnotations(annotations)
	if gate.Enabled(features.PodTopologyLabelsAdmission) && len(binding.GetLabels()) > 0 {
		labels := pod.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, binding.GetLabels())
		pod.SetLabels(labels)
	}
	return setScheduled(pod)
}

// setScheduled replaces pod's PodScheduled condition with a True one (no reason or
// message), transitioned now unless it was True already, as kube's
// UpdatePodCondition does.
func setScheduled(pod *unstructured.Unstructured) error {
	conditions, _, _ := unstructured.NestedSlice(pod.Object, "status", "conditions")
	scheduled := map[string]any{"type": "PodScheduled", "status": "True",
		"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}
	for i, c := range conditions {
		cond, _ := c.(map[string]any)
		if cond["type"] != "PodScheduled" {
			continue
		}
		if cond["status"] == "True" && cond["lastTransitionTime"] != nil {
			scheduled["lastTransitionTime"] = cond["lastTransitionTime"]
		}
		conditions[i] = scheduled
		return unstructured.SetNestedSlice(pod.Object, conditions, "status", "conditions")
	}
	return unstructured.SetNestedSlice(pod.Object, append(conditions, scheduled), "status", "conditions")
}
