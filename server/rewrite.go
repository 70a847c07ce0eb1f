package server

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/concordproject/concord/server/request"
	"github.com/concordproject/concord/server/respond"
	"github.com/concordproject/concord/wire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// serveRewrite serves the storage-migration fast path (see wire.RewritePath): it
// re-encodes one page of a resource's objects in the current storage version with the
// preconditions and results of a client-side read-and-write-back (see
// registry.Store.Rewrite). It is a write of the resource: only writers may call it,
// and the storage version barrier holds it like any other write.
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
	result, err := s.cfg.Store.Rewrite(r.Context(), res, r.URL.Query().Get("continue"), limit)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	respond.Object(w, r, http.StatusOK, result)
}
