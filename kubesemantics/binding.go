package kubesemantics

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
)

// bindingKinds are the strategies of core/v1 Bindings, created and never stored (a
// review's): what kube checks of one is ValidateBinding's.
func bindingKinds() map[schema.GroupResource]strategy {
	return map[schema.GroupResource]strategy{
		{Resource: "bindings"}: kind[*core.Binding]{review: true}.erase(),
	}
}

// ValidateBinding checks binding, a core/v1 Binding, as kube-apiserver's binding of a
// Pod does (its target, a Node's name), and returns kube's aggregate of the errors, a
// plain error: kube-apiserver answers it 500.
func (s *Semantics) ValidateBinding(binding *unstructured.Unstructured) error {
	ext, err := typed(binding.GroupVersionKind(), binding.Object)
	if err != nil {
		return err
	}
	internal := &core.Binding{}
	if err := legacyscheme.Scheme.Convert(ext, internal, nil); err != nil {
		return fmt.Errorf("converting a Binding to kube's internal version: %w", err)
	}
	var errs error
	s.gates.Do(func() { errs = corevalidation.ValidatePodBinding(internal).ToAggregate() })
	return errs
}
