package server

import (
	"net/http"

	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func (s *Server) serveCreate(w http.ResponseWriter, r *http.Request, q *apiRequest) {
	ctx := r.Context()
	wr, err := parseWrite(r, "create", "")
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	dry, fv, body := wr.dryRun, wr.validation, wr.body
	obj, warnings, err := decodeRequestObject(r, body, q.res, q.version.Name, fv)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if q.res.Namespaced {
		if ns := obj.GetNamespace(); ns != "" && ns != q.info.Namespace {
			respond.Error(w, r, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request"))
			return
		}
	}
	fm, err := s.fieldManager(q.res, q.version.Name, "")
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	obj = fm.trackCreate(obj, wr.manager)
	created, err := s.cfg.Store.Create(ctx, store.Ref{Resource: q.res, Version: q.version.Name, Namespace: q.info.Namespace}, obj, s.writeOptions(q, "", dry))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	s.writeWritten(w, r, q, created, true, warnings)
}
