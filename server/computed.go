package server

import (
	"net/http"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// serveComputed answers a get or list of a computed resource (registry.Hooks.Compute)
// from the objects its hook makes for the request: one object, or a list filtered by
// the label and field selectors (metadata.name and metadata.namespace, as for any
// object), without a resourceVersion, for nothing is stored.
func (s *Server) serveComputed(w http.ResponseWriter, r *http.Request, q *apiRequest) {
	if q.info.Verb == "get" {
		objs, err := q.res.Hooks.Compute(r.Context(), q.info.Name)
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		if len(objs) != 1 {
			respond.Error(w, r, apierrors.NewNotFound(q.gr(), q.info.Name))
			return
		}
		s.writeObject(w, r, q, http.StatusOK, objs[0])
		return
	}
	opts, err := s.listOptions(r)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	pred, err := registry.NewPredicate(q.res, q.version.Name, opts)
	if err != nil {
		respond.Error(w, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	objs, err := q.res.Hooks.Compute(r.Context(), "")
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	list := &unstructured.UnstructuredList{Object: map[string]interface{}{
		"apiVersion": q.res.GroupVersion(q.version.Name).String(), "kind": q.res.Names.ListKind, "metadata": map[string]interface{}{}}}
	for _, obj := range objs {
		if pred.Matches(obj) {
			item := obj.DeepCopy()
			// Items of a list of kube's types carry no apiVersion and kind.
			delete(item.Object, "apiVersion")
			delete(item.Object, "kind")
			list.Items = append(list.Items, *item)
		}
	}
	s.writeList(w, r, q, list)
}
