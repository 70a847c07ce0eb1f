package server

import (
	"net/http"

	"github.com/concordproject/concord/respond"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// writeObject writes one object in the representation the client negotiated.
func (s *Server) writeObject(w http.ResponseWriter, r *http.Request, q *apiRequest, code int, obj *unstructured.Unstructured) {
	switch q.out.Output {
	case respond.OutputTable:
		t, err := s.table(r, q, []unstructured.Unstructured{*obj}, &metav1.ListMeta{ResourceVersion: obj.GetResourceVersion()})
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		respond.Object(w, r, code, t)
	case respond.OutputMetadata:
		respond.Object(w, r, code, toPartial(obj))
	default:
		respond.Object(w, r, code, obj)
	}
}

// writeWritten answers a successful write: the decoding warnings as Warning headers,
// then the object, 201 if the write created it and 200 otherwise.
func (s *Server) writeWritten(w http.ResponseWriter, r *http.Request, q *apiRequest, obj *unstructured.Unstructured, created bool, warnings []string) {
	for _, msg := range warnings {
		addWarning(w, msg)
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	s.writeObject(w, r, q, code, obj)
}

// toPartial returns obj's metadata as a PartialObjectMetadata.
func toPartial(obj *unstructured.Unstructured) *metav1.PartialObjectMetadata {
	p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}}
	if m, ok := obj.Object["metadata"].(map[string]interface{}); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &p.ObjectMeta)
	}
	return p
}

func toPartialList(list *unstructured.UnstructuredList) *metav1.PartialObjectMetadataList {
	out := &metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		ListMeta: listMeta(list),
		Items:    make([]metav1.PartialObjectMetadata, len(list.Items)),
	}
	for i := range list.Items {
		p := toPartial(&list.Items[i])
		p.TypeMeta = metav1.TypeMeta{}
		out.Items[i] = *p
	}
	return out
}

func listMeta(list *unstructured.UnstructuredList) metav1.ListMeta {
	return metav1.ListMeta{
		ResourceVersion:    list.GetResourceVersion(),
		Continue:           list.GetContinue(),
		RemainingItemCount: list.GetRemainingItemCount(),
	}
}
