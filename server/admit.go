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

// writeOptions returns the options of a write of q's resource by the request's user:
// the store's subresource sub, dry run, and the server's admission of the request
// (its own subresource) for the store to run, mutating before validation, validating
// after it.
func (s *Server) writeOptions(q *apiRequest, sub string, dry bool) store.WriteOptions {
	opts := store.WriteOptions{DryRun: dry, Subresource: sub}
	if m, ok := s.cfg.Admission.(admission.MutationInterface); ok {
		opts.Mutate = s.admission(q, dry, m.Handles, func(ctx context.Context, a admission.Attributes) error {
			return m.Admit(ctx, a, nil)
		})
	}
	if v, ok := s.cfg.Admission.(admission.ValidationInterface); ok {
		opts.Admit = s.admission(q, dry, v.Handles, func(ctx context.Context, a admission.Attributes) error {
			return v.Validate(ctx, a, nil)
		})
	}
	return opts
}

// admission returns a store.AdmitFunc that runs decide on the attributes of q's write of
// obj (a creation when old is nil, an update of old otherwise), if handles says it
// acts on that operation. A refusal that is not already an API status becomes a 403
// naming the object.
func (s *Server) admission(q *apiRequest, dry bool, handles func(admission.Operation) bool, decide func(context.Context, admission.Attributes) error) store.AdmitFunc {
	return func(ctx context.Context, obj, old *registry.Object) error {
		op, opts, oldObj := admission.Create, runtime.Object(&metav1.CreateOptions{}), runtime.Object(nil)
		if old != nil {
			op, opts, oldObj = admission.Update, &metav1.UpdateOptions{}, old
		}
		if !handles(op) {
			return nil
		}
		u, _ := auth.UserFrom(ctx) // behind authentication every request has one
		gv := q.res.GroupVersion(q.version.Name)
		attrs := admission.NewAttributesRecord(obj, oldObj, gv.WithKind(q.res.Names.Kind), obj.GetNamespace(), obj.GetName(),
			gv.WithResource(q.res.Names.Plural), q.info.Subresource, op, opts, dry, u.Info())
		err := decide(ctx, attrs)
		var status apierrors.APIStatus
		if err == nil || errors.As(err, &status) {
			return err
		}
		return admission.NewForbidden(attrs, err)
	}
}
