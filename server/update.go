package server

import (
	"context"
	"net/http"

	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func (s *Server) serveUpdate(w http.ResponseWriter, r *http.Request, q *apiRequest) {
	wr, err := parseWrite(r, "update", "")
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	dry, fv, body := wr.dryRun, wr.validation, wr.body
	if q.subresource == "scale" {
		data, err := bodyToJSON(r, body)
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		s.updateScale(w, r, q, data, dry)
		return
	}
	obj, warnings, err := decodeRequestObject(r, body, q.res, q.version.Name, fv)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if obj.GetName() != q.info.Name {
		respond.Error(w, r, apierrors.NewBadRequest("the name of the object ("+obj.GetName()+") does not match the name on the URL ("+q.info.Name+")"))
		return
	}
	if q.res.Namespaced && obj.GetNamespace() != "" && obj.GetNamespace() != q.info.Namespace {
		respond.Error(w, r, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
		return
	}
	sub := q.subresource
	fm, err := s.fieldManager(q.res, q.version.Name, sub)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	manager := wr.manager
	attempts := 0
	result, created, err := s.cfg.Store.Update(r.Context(), store.Ref{Resource: q.res, Version: q.version.Name, Namespace: q.info.Namespace, Name: q.info.Name}, func(_ context.Context, current *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		next := obj
		if attempts++; attempts > 1 {
			// A retry after a conflict: the first attempt took the decoded object.
			again, _, err := decodeRequestObject(r, body, q.res, q.version.Name, fv)
			if err != nil {
				return nil, err
			}
			next = again
		}
		if current == nil && next.GetResourceVersion() != "" {
			return nil, apierrors.NewNotFound(q.gr(), q.info.Name)
		}
		return fm.track(current, next, manager), nil
	}, store.UpdateOptions{WriteOptions: s.writeOptions(q, sub, dry), AllowCreate: q.subresource == "" && q.res.Hooks != nil && q.res.Hooks.AllowCreateOnUpdate})
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	s.writeWritten(w, r, q, result, created, warnings)
}
