package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/concordproject/concord/wire"
)

// RequestInfo is what the URL and method of a request say about it.
type RequestInfo struct {
	// IsResourceRequest is true for /api/v1/... and /apis/<group>/<version>/... paths
	// that name a resource; discovery paths and everything else are false.
	IsResourceRequest bool
	Path              string
	// Verb is the Kubernetes verb: get, list, watch, create, update, patch, delete,
	// deletecollection; for non-resource requests the lower-case HTTP method.
	Verb        string
	APIPrefix   string // "api" or "apis"
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
}

type requestInfoKey struct{}

// WithRequestInfo returns ctx carrying info.
func WithRequestInfo(ctx context.Context, info *RequestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, info)
}

// RequestInfoFrom returns the RequestInfo of a request's context.
func RequestInfoFrom(ctx context.Context) (*RequestInfo, bool) {
	info, ok := ctx.Value(requestInfoKey{}).(*RequestInfo)
	return info, ok
}

// ParseRequestInfo reads the Kubernetes REST path layout:
//
//	/api/v1/<resource>[/<name>[/<subresource>]]
//	/api/v1/namespaces/<namespace>/<resource>[/<name>[/<subresource>]]
//	/apis/<group>/<version>/... (the same below the version)
//
// plus the legacy /api/v1/watch/... form. GET of a collection is list (watch with
// ?watch=true), DELETE of a collection is deletecollection. A POST to
// RewritePath<group>/<resource> is the verb "rewrite" on that resource.
func ParseRequestInfo(r *http.Request) *RequestInfo {
	info := &RequestInfo{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	if rest, ok := strings.CutPrefix(r.URL.Path, wire.RewritePath); ok {
		// A storage-migration rewrite writes objects of one resource: it is a resource
		// request (verb "rewrite"), held like any write by the filters that guard the
		// resource, such as the storage version barrier.
		if parts := strings.Split(strings.Trim(rest, "/"), "/"); len(parts) == 2 && parts[0] != "" && parts[1] != "" && r.Method == http.MethodPost {
			info.IsResourceRequest, info.Verb, info.Resource = true, "rewrite", parts[1]
			if parts[0] != "core" {
				info.APIGroup = parts[0]
			}
		}
		return info
	}
	parts := splitPath(r.URL.Path)
	if len(parts) < 2 || (parts[0] != "api" && parts[0] != "apis") {
		return info
	}
	info.APIPrefix = parts[0]
	parts = parts[1:]
	if info.APIPrefix == "apis" {
		if len(parts) < 2 {
			return info // /apis/<group>: discovery
		}
		info.APIGroup, parts = parts[0], parts[1:]
	}
	info.APIVersion, parts = parts[0], parts[1:]
	if len(parts) == 0 {
		return info // group-version discovery
	}
	info.IsResourceRequest = true
	watchPath := false
	if parts[0] == "watch" {
		watchPath, parts = true, parts[1:]
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			// /namespaces/<name>: the namespace object itself.
			info.Resource, info.Name = "namespaces", parts[1]
			parts = nil
		} else {
			info.Namespace, parts = parts[1], parts[2:]
			if parts[0] == "finalize" || parts[0] == "status" {
				// /namespaces/<name>/status and /finalize are subresources of the
				// namespace itself.
				info.Resource, info.Name, info.Subresource = "namespaces", info.Namespace, parts[0]
				info.Namespace, parts = "", nil
			}
		}
	}
	if len(parts) > 0 {
		info.Resource = parts[0]
	}
	if len(parts) > 1 {
		info.Name = parts[1]
	}
	if len(parts) > 2 {
		info.Subresource = parts[2]
	}
	if info.Resource == "namespaces" && info.Name != "" {
		info.Namespace = info.Name
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		info.Verb = "get"
		if info.Name == "" {
			info.Verb = "list"
			if watchPath || isWatchQuery(r) {
				info.Verb = "watch"
			}
		} else if watchPath || isWatchQuery(r) {
			info.Verb = "watch"
		}
	case http.MethodPost:
		info.Verb = "create"
	case http.MethodPut:
		info.Verb = "update"
	case http.MethodPatch:
		info.Verb = "patch"
	case http.MethodDelete:
		info.Verb = "delete"
		if info.Name == "" {
			info.Verb = "deletecollection"
		}
	}
	return info
}

func isWatchQuery(r *http.Request) bool {
	v := r.URL.Query().Get("watch")
	return v == "true" || v == "1"
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
