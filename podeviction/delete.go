package podeviction

import (
	"context"
	"net/http"
	"slices"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	podv1 "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/utils/ptr"
)

// deletePod deletes pod with opts, once its current state meets opts' preconditions
// and recheck (if set) still holds of it, and answers Success. Unless it is a dry
// run, the Pod is first marked as a target of disruption, as kube marks it.
func (e *Evictor) deletePod(ctx context.Context, pod *corev1.Pod, opts *metav1.DeleteOptions, recheck func(*corev1.Pod) error) (*metav1.Status, error) {
	res := e.reg.Served(Pods, "v1")
	if res == nil {
		return nil, apierrors.NewInternalError(ErrNoPods)
	}
	check := func(stored *registry.Object) error {
		current := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(stored.Object, current); err != nil {
			return apierrors.NewInternalError(err)
		}
		if err := store.DeletePreconditions("Pod", current, opts.Preconditions); err != nil {
			return err
		}
		if recheck != nil {
			return recheck(current)
		}
		return nil
	}
	ref := store.Ref{Resource: res, Version: "v1", Namespace: pod.Namespace, Name: pod.Name}
	dryRun := slices.Contains(opts.DryRun, metav1.DryRunAll)
	if !dryRun {
		marked, err := e.markDisrupted(ctx, ref, check)
		if err != nil {
			return nil, err
		}
		if opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil {
			opts = opts.DeepCopy() // the mark wrote the Pod: the precondition is its new version
			opts.Preconditions.ResourceVersion = ptr.To(marked.GetResourceVersion())
		}
	}
	if errs := metav1validation.ValidateDeleteOptions(opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	_, _, err := e.store.Delete(ctx, ref, store.DeleteOptions{
		WriteOptions:       store.WriteOptions{DryRun: dryRun, Admit: func(_ context.Context, _, stored *registry.Object) error { return check(stored) }},
		Propagation:        propagation(opts),
		GracePeriodSeconds: opts.GracePeriodSeconds,
	})
	if err != nil {
		return nil, err
	}
	return &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusSuccess, Code: http.StatusCreated}, nil
}

// markDisrupted gives the Pod ref names, once check passes on it, kube's
// DisruptionTarget condition (a status write; the store retries it on conflict), and
// returns it as written.
func (e *Evictor) markDisrupted(ctx context.Context, ref store.Ref, check func(*registry.Object) error) (*registry.Object, error) {
	written, _, err := e.store.Update(ctx, ref, func(_ context.Context, current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		if err := check(current); err != nil {
			return nil, err
		}
		pod := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current.Object, pod); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		podv1.UpdatePodCondition(&pod.Status, &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"})
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		return &unstructured.Unstructured{Object: m}, nil
	}, store.UpdateOptions{WriteOptions: store.WriteOptions{Subresource: "status"}})
	return written, err
}

// propagation is the deletion's propagation policy opts ask for, nil if none.
func propagation(opts *metav1.DeleteOptions) *metav1.DeletionPropagation {
	if opts.PropagationPolicy != nil || opts.OrphanDependents == nil { //nolint:staticcheck // SA1019: kube still honours orphanDependents.
		return opts.PropagationPolicy
	}
	p := metav1.DeletePropagationBackground
	if *opts.OrphanDependents { //nolint:staticcheck // SA1019: as above.
		p = metav1.DeletePropagationOrphan
	}
	return &p
}
