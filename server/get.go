package server

import (
	"net/http"

	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func (s *Server) serveGet(w http.ResponseWriter, r *http.Request, q *apiRequest) {
	var opts metav1.GetOptions
	if err := parameterCodec.DecodeParameters(r.URL.Query(), optionsGV, &opts); err != nil {
		respond.Error(w, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	obj, err := s.cfg.Store.Get(r.Context(), store.Ref{Resource: q.res, Version: q.version.Name, Namespace: q.info.Namespace, Name: q.info.Name}, opts)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if q.subresource == "scale" {
		scale, err := toScale(q, obj)
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		respond.Object(w, r, http.StatusOK, scale)
		return
	}
	s.writeObject(w, r, q, http.StatusOK, obj)
}
