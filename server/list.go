package server

import (
	"net/http"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/respond"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

// listOptions reads the query of a list, watch or deletecollection, validated as
// Kubernetes validates it (validateListOptions).
func (s *Server) listOptions(r *http.Request) (metav1.ListOptions, error) {
	var opts metav1.ListOptions
	if err := validateListOptions(r, !s.cfg.DisableWatchList); err != nil {
		return opts, err
	}
	err := decodeQuery(r, &opts)
	return opts, err
}

func (s *Server) serveList(w http.ResponseWriter, r *http.Request, q *apiRequest) {
	opts, err := s.listOptions(r)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if opts.Watch {
		s.serveWatch(w, r, q)
		return
	}
	ref := store.Ref{Resource: q.res, Version: q.version.Name, Namespace: q.info.Namespace}
	if n, ok := s.encodedListNegotiation(r, q); ok {
		builtin := respond.ProtobufKind(q.res.GroupVersion(q.version.Name).WithKind(q.res.Names.Kind))
		l, err := s.cfg.Store.ListEncoded(r.Context(), ref, opts, store.ItemEncoder{
			Format: respond.ListItemFormat(n, builtin),
			Encode: func(o *registry.Object) ([]byte, error) { return respond.EncodeListItem(n, builtin, o) },
		})
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		respond.List(w, r, n, (*respond.EncodedList)(l))
		return
	}
	list, err := s.cfg.Store.List(r.Context(), store.Ref{Resource: q.res, Version: q.version.Name, Namespace: q.info.Namespace}, opts)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	s.writeList(w, r, q, list)
}

// writeList writes a list in the representation the client negotiated.
func (s *Server) writeList(w http.ResponseWriter, r *http.Request, q *apiRequest, list *unstructured.UnstructuredList) {
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

// encodedListNegotiation says whether a list is answered from its items' encodings
// (the objects themselves, in JSON or protobuf), and in which.
func (s *Server) encodedListNegotiation(r *http.Request, q *apiRequest) (respond.Negotiation, bool) {
	if q.out.Output != respond.OutputObject {
		return respond.Negotiation{}, false
	}
	gvk := q.res.GroupVersion(q.version.Name).WithKind(q.res.Names.Kind)
	n, err := respond.Negotiate(r, respond.ProtobufKind(gvk))
	return n, err == nil && !n.YAML
}
