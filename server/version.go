package server

import (
	"net/http"

	"github.com/concordproject/concord/respond"
)

// serveVersion answers /version with the server's version.Info (pretty-printed, as
// kube-apiserver does).
func (s *Server) serveVersion(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	respond.Object(w, r, http.StatusOK, s.cfg.Version)
}
