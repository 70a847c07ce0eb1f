package server

import (
	"context"
	"errors"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
)

// admit returns the validating admission of a write of q's resource (subresource
// sub) by the request's user, for the store to run before it writes; nil when the
// server has no admission.
func (s *Server) admit(q *apiRequest, sub string, dry bool) store.AdmitFunc {
	if s.cfg.Admission == nil {
		return nil
	}
	return func(ctx context.Context, obj, old *registry.Object) error {
		op, opts, oldObj := admission.Create, runtime.Object(&metav1.CreateOptions{}), runtime.Object(nil)
		if old != nil {
			op, opts, oldObj = admission.Update, &metav1.UpdateOptions{}, old
		}
		if !s.cfg.Admission.Handles(op) {
			return nil
		}
		u, _ := auth.UserFrom(ctx) // behind authentication every request has one
		gv := q.res.GroupVersion(q.version.Name)
		attrs := admission.NewAttributesRecord(obj, oldObj, gv.WithKind(q.res.Names.Kind), obj.GetNamespace(), obj.GetName(),
			gv.WithResource(q.res.Names.Plural), sub, op, opts, dry, u.Info())
		err := s.cfg.Admission.Validate(ctx, attrs, nil)
		var status apierrors.APIStatus
		if err == nil || errors.As(err, &status) {
			return err
		}
		return admission.NewForbidden(attrs, err)
	}
}
