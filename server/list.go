package server

import (
	"net/http"

	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/server/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func listOptions(r *http.Request) (metav1.ListOptions, error) {
	var opts metav1.ListOptions
	if err := parameterCodec.DecodeParameters(r.URL.Query(), optionsGV, &opts); err != nil {
		return opts, apierrors.NewBadRequest(err.Error())
	}
	return opts, nil
}

func (s *Server) serveList(w http.ResponseWriter, r *http.Request, q *apiRequest) {
	opts, err := listOptions(r)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if opts.Watch {
		s.serveWatch(w, r, q)
		return
	}
	list, err := s.cfg.Store.List(r.Context(), store.Ref{Resource: q.res, Version: q.version.Name, Namespace: q.info.Namespace}, opts)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	switch q.out.Output {
	case respond.OutputTable:
		t, err := s.table(r, q, list.Items, ptr.To(listMeta(list)))
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		respond.Object(w, r, http.StatusOK, t)
	case respond.OutputMetadata:
		respond.Object(w, r, http.StatusOK, toPartialList(list))
	default:
		respond.Object(w, r, http.StatusOK, list)
	}
}
