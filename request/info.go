package request

import (
	"context"
	"net/http"
	"strings"

	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/fields"
)

// Info is what the URL and method of a request say about it.
type Info struct {
	// IsResourceRequest is true for /api/v1/... and /apis/<group>/<version>/... paths
	// that name a resource, and for storage-migration rewrites; discovery paths and
	// everything else are false.
	IsResourceRequest bool
	Path              string
	// Verb is the Kubernetes verb: get, list, watch, create, update, patch, delete,
	// deletecollection, rewrite; for non-resource requests the lower-case HTTP method.
	Verb        string
	APIPrefix   string // "api" or "apis"
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	// Subpath is the path beyond the subresource, with a leading slash and the
	// request's trailing one ("" if there is none): what a proxy subresource
	// forwards.
	Subpath string
}

type infoKey struct{}

// WithInfo returns ctx carrying info.
func WithInfo(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// InfoFrom returns the Info of a request's context.
func InfoFrom(ctx context.Context) (*Info, bool) {
	info, ok := ctx.Value(infoKey{}).(*Info)
	return info, ok
}

// IsWatch reports whether a request asks for a watch by its query (?watch=true or 1).
func IsWatch(r *http.Request) bool {
	v := r.URL.Query().Get("watch")
	return v == "true" || v == "1"
}

// Parse reads the Kubernetes REST path layout:
//
//	/api/v1/<resource>[/<name>[/<subresource>[/<subpath>]]]
//	/api/v1/namespaces/<namespace>/<resource>[/<name>[/<subresource>[/<subpath>]]]
//	/apis/<group>/<version>/... (the same below the version)
//
// plus the legacy /api/v1/watch/... form. GET of a collection is list (watch with
// ?watch=true), DELETE of a collection is deletecollection. A POST to
// wire.RewritePath<group>/<resource> is the verb "rewrite" on that resource: a write
// like any other, held by the filters that guard the resource.
func Parse(r *http.Request) *Info {
	info := &Info{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	if strings.HasPrefix(r.URL.Path, wire.RewritePath) {
		if gr, ok := wire.ParseRewritePath(r.URL.Path); ok && r.Method == http.MethodPost {
			info.IsResourceRequest, info.Verb = true, wire.RewriteVerb
			info.APIGroup, info.Resource = gr.Group, gr.Resource
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
	info.parseResource(parts)
	info.Verb = verb(r, info.Name != "", watchPath || IsWatch(r))
	info.nameFromSelector(r)
	return info
}

// nameFromSelector names the one object a collection request selects by name: a
// list, watch or deletecollection whose field selector requires metadata.name to be
// a value has that Name, as in Kubernetes, so that authorization by resourceNames
// covers it (an informer of one ConfigMap).
func (info *Info) nameFromSelector(r *http.Request) {
	switch info.Verb {
	case "list", "watch", "deletecollection":
	default:
		return
	}
	if info.Name != "" {
		return
	}
	sel, err := fields.ParseSelector(r.URL.Query().Get("fieldSelector"))
	if err != nil {
		return
	}
	if name, ok := sel.RequiresExactMatch("metadata.name"); ok {
		info.Name = name
	}
}

// parseResource reads [namespaces/<ns>/]<resource>[/<name>[/<subresource>[/<subpath>]]].
func (info *Info) parseResource(parts []string) {
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			// /namespaces/<name>: the namespace object itself.
			info.Resource, info.Name, info.Namespace = "namespaces", parts[1], parts[1]
			return
		}
		info.Namespace, parts = parts[1], parts[2:]
		if parts[0] == "finalize" || parts[0] == "status" {
			// /namespaces/<name>/status and /finalize are subresources of the
			// namespace itself.
			info.Resource, info.Name, info.Subresource = "namespaces", info.Namespace, parts[0]
			return
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
	if len(parts) > 3 {
		info.Subpath = "/" + strings.Join(parts[3:], "/")
	}
	if info.Subresource != "" && strings.HasSuffix(info.Path, "/") && !strings.HasSuffix(info.Subpath, "/") {
		info.Subpath += "/"
	}
	if info.Resource == "namespaces" && info.Name != "" {
		info.Namespace = info.Name
	}
}

// verb maps the HTTP method of a resource request to its Kubernetes verb.
func verb(r *http.Request, named, watch bool) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case watch:
			return "watch"
		case named:
			return "get"
		}
		return "list"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if named {
			return "delete"
		}
		return "deletecollection"
	}
	return strings.ToLower(r.Method)
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
