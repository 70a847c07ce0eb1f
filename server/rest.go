package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// apiRequest is one resource request after routing: the resource, its served version and
// what the URL names.
type apiRequest struct {
	info    *request.Info
	res     *registry.Resource
	version *registry.Version
	// subresource is "", "status", "scale", "finalize", or the name of an action, a
	// connect subresource or one of the resource's semantics.
	subresource string
	out         respond.Negotiation
}

func (q *apiRequest) gr() schema.GroupResource { return q.res.GroupResource() }

// serveAPI handles everything under /api and /apis: discovery and resources.
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	info, _ := request.InfoFrom(r.Context())
	if h := s.proxied(info); h != nil {
		h.ServeHTTP(w, r) // what the backend takes is the backend's to say
		return
	}
	if s.cfg.CBOR {
		r = r.WithContext(respond.WithCBOR(r.Context()))
	} else if isCBOR(r.Header.Get("Content-Type")) {
		respond.Error(w, r, unsupportedMediaType(r.Header.Get("Content-Type")))
		return
	}
	if !info.IsResourceRequest {
		s.serveDiscovery(w, r, info)
		return
	}
	if (info.APIPrefix == "api" && info.APIGroup != "") || (info.APIPrefix == "apis" && info.APIGroup == "") {
		respond.Error(w, r, apierrors.NewNotFound(schema.GroupResource{Resource: info.Resource}, info.Name))
		return
	}
	q, err := s.route(r, info)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if v := q.version; v.Deprecated {
		msg := fmt.Sprintf("%s is deprecated", q.res.GroupVersion(v.Name).String()+" "+q.res.Names.Kind)
		if v.DeprecationWarning != nil {
			msg = *v.DeprecationWarning
		}
		addWarning(w, msg)
	}
	if action, ok := q.res.Action(q.subresource); ok {
		s.serveAction(w, r, q, action)
		return
	}
	if c, ok := q.res.Connect(q.subresource); ok {
		s.serveConnect(w, r, q, c)
		return
	}
	switch {
	case q.res.Computed():
		s.serveComputed(w, r, q)
		return
	case !q.res.Persisted() && info.Verb == "create":
		s.serveReview(w, r, q)
		return
	case !q.res.Persisted():
		respond.Error(w, r, apierrors.NewMethodNotSupported(q.gr(), info.Verb))
		return
	}
	switch info.Verb {
	case "get":
		s.serveGet(w, r, q)
	case "list":
		s.serveList(w, r, q)
	case "watch":
		s.serveWatch(w, r, q)
	case "create":
		s.serveCreate(w, r, q)
	case "update":
		s.serveUpdate(w, r, q)
	case "patch":
		s.servePatch(w, r, q)
	case "delete":
		s.serveDelete(w, r, q)
	case "deletecollection":
		s.serveDeleteCollection(w, r, q)
	default:
		respond.Error(w, r, apierrors.NewMethodNotSupported(q.gr(), r.Method))
	}
}

// route finds the resource and checks that the URL fits it (scope, subresource,
// verb).
func (s *Server) route(r *http.Request, info *request.Info) (*apiRequest, error) {
	gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
	res, ver := s.cfg.Registry.Lookup(gvr)
	if res == nil {
		return nil, notFoundPath(info)
	}
	q := &apiRequest{info: info, res: res, version: ver}
	if res.Namespaced {
		if info.Namespace == "" && info.Verb != "list" && info.Verb != "watch" {
			return nil, notFoundPath(info)
		}
	} else if info.Namespace != "" && (res.Group != "" || res.Names.Plural != "namespaces") {
		return nil, notFoundPath(info)
	}
	switch info.Subresource {
	case "":
	case "status":
		if ver.Subresources == nil || ver.Subresources.Status == nil {
			return nil, notFoundPath(info)
		}
		q.subresource = "status"
	case "scale":
		if ver.Subresources == nil || ver.Subresources.Scale == nil {
			return nil, notFoundPath(info)
		}
		q.subresource = "scale"
	case "finalize":
		if res.Group != "" || res.Names.Plural != "namespaces" {
			return nil, notFoundPath(info)
		}
		q.subresource = "finalize"
	default:
		_, action := res.Action(info.Subresource)
		_, connect := res.Connect(info.Subresource)
		if !action && !connect && !res.SemanticSubresource(info.Subresource) {
			return nil, notFoundPath(info)
		}
		q.subresource = info.Subresource
	}
	if c, _ := res.Connect(q.subresource); !c.Subpath && strings.Trim(info.Subpath, "/") != "" {
		return nil, notFoundPath(info) // only a proxy has a path beyond its subresource
	}
	if err := checkPathSegments(info); err != nil {
		return nil, err
	}
	if err := checkVerb(r.Method, info, res, q.subresource); err != nil {
		return nil, err
	}
	out, err := respond.Negotiate(r, respond.ProtobufKind(res.GroupVersion(ver.Name).WithKind(res.Names.Kind)) && q.subresource != "scale")
	if err != nil {
		return nil, err
	}
	q.out = out
	if isWrite(info.Verb) && res.Hooks != nil && res.Hooks.Writable != nil {
		if err := res.Hooks.Writable(r.Context()); err != nil {
			return nil, apierrors.NewForbidden(res.GroupResource(), info.Name, err)
		}
	}
	return q, nil
}

// checkPathSegments refuses a name or namespace in the path that cannot name an
// object ("." or "..", or one holding "/" or "%"), as kube-apiserver refuses it (400).
func checkPathSegments(info *request.Info) error {
	if msgs := content.IsPathSegmentName(info.Namespace); info.Namespace != "" && len(msgs) > 0 {
		return apierrors.NewBadRequest(fmt.Sprintf("Namespace parameter invalid: %q: %s", info.Namespace, strings.Join(msgs, ";")))
	}
	if msgs := content.IsPathSegmentName(info.Name); info.Name != "" && len(msgs) > 0 {
		return apierrors.NewBadRequest(fmt.Sprintf("Name parameter invalid: %q: %s", info.Name, strings.Join(msgs, ";")))
	}
	return nil
}

// checkVerb refuses what the resource (or its subresource sub) does not serve, as
// kube-apiserver refuses it: a method it has no route for, or a verb the resource's
// verbs lack, is a 405; the path of one object of a resource that serves no verb
// on one object (a review) is a 404, for it names nothing.
func checkVerb(method string, info *request.Info, res *registry.Resource, sub string) error {
	served := res.ServedVerbs(sub)
	if sub == "" && info.Name != "" && !slices.ContainsFunc(served, func(v string) bool {
		return v == "get" || v == "update" || v == "patch" || v == "delete"
	}) {
		return notFoundPath(info)
	}
	switch method {
	case http.MethodGet, http.MethodDelete:
	case http.MethodPost:
		if info.Name != "" && sub == "" {
			return methodNotAllowed()
		}
	case http.MethodPut, http.MethodPatch:
		if info.Name == "" {
			return methodNotAllowed()
		}
	default: // HEAD, OPTIONS, and methods of no meaning
		return methodNotAllowed()
	}
	if !slices.Contains(served, info.Verb) {
		return methodNotAllowed()
	}
	return nil
}

// methodNotAllowed is kube-apiserver's answer to a method a path does not serve.
func methodNotAllowed() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed, Reason: metav1.StatusReasonMethodNotAllowed,
		Message: "the server does not allow this method on the requested resource",
		Details: &metav1.StatusDetails{}, // kube's router answers empty details
	}}
}

func isWrite(v string) bool {
	switch v {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// notFoundPath is Kubernetes' answer for a URL that names no resource.
func notFoundPath(info *request.Info) error {
	err := apierrors.NewNotFound(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, info.Name)
	err.ErrStatus.Message = "the server could not find the requested resource"
	err.ErrStatus.Details = &metav1.StatusDetails{}
	return err
}

// addWarning adds a Warning header the way Kubernetes does (code 299, agent "-").
func addWarning(w http.ResponseWriter, msg string) {
	msg = strings.ReplaceAll(msg, `"`, `\"`)
	w.Header().Add("Warning", fmt.Sprintf(`299 - "%s"`, msg))
}

// dryRun reads ?dryRun=All; any other value is a 400.
func dryRun(r *http.Request) (bool, error) {
	vals := r.URL.Query()["dryRun"]
	for _, v := range vals {
		if v != "All" {
			return false, apierrors.NewBadRequest(fmt.Sprintf("invalid dryRun %q: the only allowed value is All", v))
		}
	}
	return len(vals) > 0, nil
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
