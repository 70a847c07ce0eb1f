package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// serveReview answers the creation of a review (TokenReview, SubjectAccessReview,
// ...) as kube-apiserver does: the object is decoded like any creation, its managed
// fields recorded, mutating admission, the review's validation (kube's: package
// kubesemantics) and validating admission run, then it is converted to the
// resource's storage version for its Review hook, and the answer goes back in the
// request's version, 201 Created. Nothing is stored, so a dry run is answered the
// same way. Asked for a Table or metadata alone, it answers 406, as Kubernetes does.
func (s *Server) serveReview(w http.ResponseWriter, r *http.Request, q *apiRequest) {
	ctx := r.Context()
	if q.out.Output != respond.OutputObject {
		// A review is an answer, not a listed object: no Table, no metadata alone.
		respond.Error(w, r, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", q.gr(), "",
			"a review is answered as the object itself: as=Table and as=PartialObjectMetadata are not served", 0, false))
		return
	}
	obj, warnings, dry, err := s.admitReview(r, q)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if err := q.res.Convert(ctx, []*unstructured.Unstructured{obj}, q.res.StorageVersion); err != nil {
		respond.Error(w, r, err)
		return
	}
	answer, err := q.res.Hooks.Review(ctx, obj, dry)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if err := q.res.Convert(ctx, []*unstructured.Unstructured{answer}, q.version.Name); err != nil {
		respond.Error(w, r, err)
		return
	}
	s.writeWritten(w, r, q, answer, true, warnings)
}

// admitReview decodes the review q's request creates, records its managed fields,
// admits and validates it, and returns it, with the decoding's warnings and whether
// the request is a dry run.
func (s *Server) admitReview(r *http.Request, q *apiRequest) (*unstructured.Unstructured, []string, bool, error) {
	ctx := r.Context()
	wr, err := parseWrite(r, "create", "")
	if err != nil {
		return nil, nil, false, err
	}
	obj, warnings, err := decodeRequestObject(r, wr.body, q.res, q.version.Name, wr.validation)
	if err != nil {
		return nil, nil, false, err
	}
	if q.res.Namespaced {
		if ns := obj.GetNamespace(); ns != "" && ns != q.info.Namespace {
			return nil, nil, false, apierrors.NewBadRequest("namespace of the request object does not match the namespace of the URL")
		}
		obj.SetNamespace(q.info.Namespace)
	}
	fm, err := s.fieldManager(q.res, q.version.Name, "")
	if err != nil {
		return nil, nil, false, err
	}
	obj = fm.trackCreate(obj, wr.manager)
	mutate, validate := s.writeAdmission(q, q.res.GroupVersion(q.version.Name).WithKind(q.res.Names.Kind), wr.dryRun)
	if mutate != nil {
		if err := mutate(ctx, obj, nil); err != nil {
			return nil, nil, false, err
		}
	}
	if err := q.res.ValidateCreate(ctx, q.version.Name, obj); err != nil {
		return nil, nil, false, err
	}
	if validate != nil {
		if err := validate(ctx, obj, nil); err != nil {
			return nil, nil, false, err
		}
	}
	return obj, warnings, wr.dryRun, nil
}

// serveAction answers the creation of an action subresource (a ServiceAccount's
// token, a Pod's binding): the object is read as it is stored, the body admitted, and
// the action answers it from the object, 201 Created. The action writes what it
// writes itself (a binding, the Pod), nothing with dryRun.
func (s *Server) serveAction(w http.ResponseWriter, r *http.Request, q *apiRequest, action registry.Action) {
	ctx := r.Context()
	body, err := readBody(r)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	data, err := bodyToJSON(r, body)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if err := checkActionBody(q, action, data); err != nil {
		respond.Error(w, r, err) // before the object is read, as kube checks it
		return
	}
	obj, err := s.cfg.Store.Get(ctx, store.Ref{Resource: q.res, Version: q.res.StorageVersion, Namespace: q.info.Namespace, Name: q.info.Name}, metav1.GetOptions{})
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if data, err = s.admitAction(ctx, r, q, action, data); err != nil {
		respond.Error(w, r, err)
		return
	}
	dry, err := dryRun(r)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	answer, err := action.Do(ctx, obj, data, dry)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	respond.Object(w, r, http.StatusCreated, answer)
}

// checkActionBody refuses, before the object is read, as kube decodes it first, a body
// (data, JSON) of another kind than the action's, or in a version it does not take
// (400), and, with the action's NameMismatch, one that names another object than the
// URL.
func checkActionBody(q *apiRequest, action registry.Action, data []byte) error {
	var body struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the body is not a %s: %v", action.Kind.Kind, err))
	}
	if err := checkActionKind(action, body.APIVersion, body.Kind); err != nil {
		return err
	}
	if action.NameMismatch != "" && body.Metadata.Name != q.info.Name {
		return apierrors.NewBadRequest(action.NameMismatch)
	}
	return nil
}

// checkActionKind refuses a body of apiVersion and kind (either may be empty: the
// action's) that the action does not take.
func checkActionKind(action registry.Action, apiVersion, kind string) error {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if kind == "" {
		kind = action.Kind.Kind
	}
	if apiVersion == "" {
		gv = action.Kind.GroupVersion()
	}
	if kind == action.Kind.Kind && gv.Group == action.Kind.Group && (gv.Version == action.Kind.Version || slices.Contains(action.Versions, gv.Version)) {
		return nil
	}
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s", kind, gv.Version, action.Kind.Kind))
}

// admitAction runs admission on the creation of an action subresource's object
// (data, JSON of the action's kind), as Kubernetes admits a TokenRequest: named and
// namespaced as the URL says, then admitCreation. It returns the object as admitted.
func (s *Server) admitAction(ctx context.Context, r *http.Request, q *apiRequest, action registry.Action, data []byte) ([]byte, error) {
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(data, &obj.Object); err != nil || obj.Object == nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body is not a %s: %v", action.Kind.Kind, err))
	}
	obj.SetGroupVersionKind(action.Kind)
	obj.SetName(q.info.Name)
	obj.SetNamespace(q.info.Namespace)
	if err := s.admitCreation(ctx, r, q, action.Kind, obj); err != nil {
		return nil, err
	}
	return obj.MarshalJSON()
}

// admitCreation runs mutating admission (which may change obj), then validating
// admission, on the creation of obj, of kind, that q answers without storing it (a
// review, an action subresource's object).
func (s *Server) admitCreation(ctx context.Context, r *http.Request, q *apiRequest, kind schema.GroupVersionKind, obj *unstructured.Unstructured) error {
	dry, err := dryRun(r)
	if err != nil {
		return err
	}
	mutate, validate := s.writeAdmission(q, kind, dry)
	for _, admit := range []store.AdmitFunc{mutate, validate} {
		if admit == nil {
			continue
		}
		if err := admit(ctx, obj, nil); err != nil {
			return err
		}
	}
	return nil
}
