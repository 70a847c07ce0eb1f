package priorityclass

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/tools/cache"
)

// ErrNotSynced means the admission's informer has not read the PriorityClasses yet.
var ErrNotSynced = errors.New("the PriorityClasses have not been read yet")

// Admission is the part of Kubernetes' Priority admission plugin that concerns
// PriorityClasses: a class marked globalDefault is refused while another one is.
type Admission struct {
	*admission.Handler
	classes cache.SharedIndexInformer
}

// NewAdmission returns the admission over classes, an informer of PriorityClasses
// (unstructured, in v1) its owner runs.
func NewAdmission(classes cache.SharedIndexInformer) *Admission {
	return &Admission{Handler: admission.NewHandler(admission.Create, admission.Update), classes: classes}
}

// Informer returns the informer of PriorityClasses the admission reads.
func (a *Admission) Informer() cache.SharedIndexInformer { return a.classes }

// Ready reports nil once the informer has read the PriorityClasses.
func (a *Admission) Ready() error {
	if !a.classes.HasSynced() {
		return ErrNotSynced
	}
	return nil
}

// Validate refuses (403 Forbidden, Kubernetes' message) a creation of a PriorityClass
// marked globalDefault, or an update that marks one, while another class is marked.
func (a *Admission) Validate(_ context.Context, attrs admission.Attributes, _ admission.ObjectInterfaces) error {
	if attrs.GetResource().GroupResource() != GroupResource || attrs.GetSubresource() != "" {
		return nil
	}
	obj, ok := attrs.GetObject().(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	if def, _, _ := unstructured.NestedBool(obj.Object, "globalDefault"); !def {
		return nil
	}
	for _, item := range a.classes.GetStore().List() {
		other, ok := item.(*unstructured.Unstructured)
		if !ok || other.GetName() == obj.GetName() {
			continue
		}
		if def, _, _ := unstructured.NestedBool(other.Object, "globalDefault"); def {
			return admission.NewForbidden(attrs, fmt.Errorf("PriorityClass %s is already marked as default. Only one default can exist", other.GetName()))
		}
	}
	return nil
}
