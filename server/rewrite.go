package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/respond"
	"github.com/concordproject/concord/wire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// serveRewrite serves the storage-migration fast path (see wire.RewritePath): it
// re-encodes one page of a resource's objects in the current storage version with the
// preconditions and results of a client-side read-and-write-back (see
// registry.Store.Rewrite). It is a write of the resource: only writers may call it,
// and the storage version barrier holds it like any other write. With
// wire.RewriteStorageVersionParam, its writes are also held to the resource's
// StorageVersion object at that resourceVersion (registry.Store.RewriteGuarded).
func (s *Server) serveRewrite(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		respond.Error(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "rewrite"}, r.Method))
		return
	}
	// ParseRequestInfo has read the group and resource from the path.
	info, ok := request.InfoFrom(r.Context())
	if !ok || !info.IsResourceRequest {
		respond.Error(w, r, apierrors.NewBadRequest(fmt.Sprintf("want %s<group>/<resource> (group \"core\" for the legacy group)", wire.RewritePath)))
		return
	}
	gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
	res := s.cfg.Registry.Get(gr)
	if res == nil {
		respond.Error(w, r, apierrors.NewNotFound(gr, ""))
		return
	}
	var limit int64
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.ParseInt(l, 10, 64)
		if err != nil || n <= 0 {
			respond.Error(w, r, apierrors.NewBadRequest(fmt.Sprintf("invalid limit %q: want a positive integer", l)))
			return
		}
		limit = n
	}
	guard, err := s.rewriteGuard(gr, r.URL.Query().Get(wire.RewriteStorageVersionParam))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	result, err := s.cfg.Store.RewriteGuarded(r.Context(), res, r.URL.Query().Get("continue"), limit, guard)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	respond.Object(w, r, http.StatusOK, result)
}

// storageVersionsGR is the resource of StorageVersion objects.
var storageVersionsGR = schema.GroupResource{Group: "internal.apiserver.k8s.io", Resource: "storageversions"}

// rewriteGuard is the guard a rewrite of gr asks for with rv, the value of
// wire.RewriteStorageVersionParam: its StorageVersion object at that resourceVersion
// (nil if rv is empty).
func (s *Server) rewriteGuard(gr schema.GroupResource, rv string) (*store.RewriteGuard, error) {
	if rv == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n <= 0 {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid %s %q: want a resourceVersion", wire.RewriteStorageVersionParam, rv))
	}
	svs := s.cfg.Registry.Get(storageVersionsGR)
	if svs == nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s: this server does not serve %s", wire.RewriteStorageVersionParam, storageVersionsGR))
	}
	return &store.RewriteGuard{Resource: svs, Name: wire.StorageVersionName(gr), ResourceVersion: n}, nil
}
