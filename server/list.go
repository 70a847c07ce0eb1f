package server

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func listOptions(r *http.Request) (metav1.ListOptions, error) {
	var opts metav1.ListOptions
	if err := parameterCodec.DecodeParameters(r.URL.Query(), optionsGV, &opts); err != nil {
		return opts, apierrors.NewBadRequest(err.Error())
	}
	return opts, nil
}

func (s *Server) serveList(w http.ResponseWriter, r *http.Request, q *request) {
	opts, err := listOptions(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	if opts.Watch {
		s.serveWatch(w, r, q)
		return
	}
	list, err := s.cfg.Store.List(r.Context(), q.res, q.version.Name, q.info.Namespace, opts)
	if err != nil {
		writeError(w, r, err)
		return
	}
	switch q.out.output {
	case OutputTable:
		t, err := s.table(r, q, list.Items, ptrTo(listMeta(list)))
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, r, http.StatusOK, t)
	case OutputMetadata:
		writeJSON(w, r, http.StatusOK, toPartialList(list))
	default:
		writeJSON(w, r, http.StatusOK, list)
	}
}
