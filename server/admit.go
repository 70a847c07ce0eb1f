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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// writeOptions returns the options of a write of q's resource by the request's user:
// the store's subresource sub, dry run, and the server's admission of the request
// (its own subresource) for the store to run, mutating before validation, validating
// after it.
func (s *Server) writeOptions(q *apiRequest, sub string, dry bool) store.WriteOptions {
	opts := store.WriteOptions{DryRun: dry, Subresource: sub}
	opts.Mutate, opts.Admit = s.writeAdmission(q, q.res.GroupVersion(q.version.Name).WithKind(q.res.Names.Kind), dry)
	return opts
}

// writeAdmission returns the mutating and validating admission of q's writes of
// objects of kind (nil where the server has none).
func (s *Server) writeAdmission(q *apiRequest, kind schema.GroupVersionKind, dry bool) (mutate, validate store.AdmitFunc) {
	if m, ok := s.cfg.Admission.(admission.MutationInterface); ok {
		mutate = s.admission(q, kind, dry, m.Handles, func(ctx context.Context, a admission.Attributes) error {
			return m.Admit(ctx, a, nil)
		})
	}
	if v, ok := s.cfg.Admission.(admission.ValidationInterface); ok {
		validate = s.admission(q, kind, dry, v.Handles, func(ctx context.Context, a admission.Attributes) error {
			return v.Validate(ctx, a, nil)
		})
	}
	return mutate, validate
}

// admission returns a store.AdmitFunc that runs decide on the attributes of q's write of
// obj, of kind (a creation when old is nil, an update of old otherwise), if handles
// says it acts on that operation. A refusal that is not already an API status becomes a 403
// naming the object.
func (s *Server) admission(q *apiRequest, kind schema.GroupVersionKind, dry bool, handles func(admission.Operation) bool, decide func(context.Context, admission.Attributes) error) store.AdmitFunc {
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
		attrs := admission.NewAttributesRecord(obj, oldObj, kind, obj.GetNamespace(), obj.GetName(),
			gv.WithResource(q.res.Names.Plural), q.info.Subresource, op, opts, dry, u.Info())
		err := decide(ctx, attrs)
		var status apierrors.APIStatus
		if err == nil || errors.As(err, &status) {
			return err
		}
		return admission.NewForbidden(attrs, err)
	}
}

// deleteAdmission returns the admission of a deletion of q's object (or, in a
// collection, of each object): mutating then validating admission of DELETE, with the
// object as stored as the old object and the request's options, as Kubernetes runs
// them before it deletes. A refusal that is not already an API status becomes a 403.
func (s *Server) deleteAdmission(q *apiRequest, opts *metav1.DeleteOptions, dry bool) store.AdmitFunc {
	m, mutates := s.cfg.Admission.(admission.MutationInterface)
	v, validates := s.cfg.Admission.(admission.ValidationInterface)
	mutates = mutates && m.Handles(admission.Delete)
	validates = validates && v.Handles(admission.Delete)
	if !mutates && !validates {
		return nil
	}
	return func(ctx context.Context, _, old *registry.Object) error {
		u, _ := auth.UserFrom(ctx)
		gv := q.res.GroupVersion(q.version.Name)
		attrs := admission.NewAttributesRecord(nil, old.DeepCopy(), gv.WithKind(q.res.Names.Kind), q.info.Namespace, q.info.Name,
			gv.WithResource(q.res.Names.Plural), q.info.Subresource, admission.Delete, opts, dry, u.Info())
		err := error(nil)
		if mutates {
			err = m.Admit(ctx, attrs, nil)
		}
		if err == nil && validates {
			err = v.Validate(ctx, attrs, nil)
		}
		var status apierrors.APIStatus
		if err == nil || errors.As(err, &status) {
			return err
		}
		return admission.NewForbidden(attrs, err)
	}
}
