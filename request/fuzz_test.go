package request

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/fields"
)

// FuzzParse parses requests of arbitrary method, path and query. Parse must not
// panic, and what it says must follow from the request as its documentation says:
// the verb is the method's (lower-cased) or the Kubernetes verb of that method; the
// names taken from path segments hold no '/'; a Name with a '/' can only come from a
// collection request's field selector, which must then require exactly that name.
func FuzzParse(f *testing.F) {
	for _, s := range [][3]string{
		{"GET", "/healthz", ""},
		{"GET", "/api", ""},
		{"GET", "/api/v1", ""},
		{"GET", "/apis/apps", ""},
		{"GET", "/apis/apps/v1", ""},
		{"POST", "/debug/pprof/profile", ""},
		{"GET", "/api/v1/namespaces", ""},
		{"GET", "/api/v1/namespaces/ns1", ""},
		{"PUT", "/api/v1/namespaces/ns1/status", ""},
		{"PUT", "/api/v1/namespaces/ns1/finalize", ""},
		{"DELETE", "/api/v1/namespaces/ns1", ""},
		{"GET", "/api/v1/namespaces/kube-system/configmaps", "watch=true&fieldSelector=metadata.name%3Dauth"},
		{"DELETE", "/api/v1/namespaces/ns1/configmaps", "fieldSelector=metadata.name%3Da"},
		{"GET", "/api/v1/namespaces/ns1/configmaps", "fieldSelector=metadata.name%21%3Da"},
		{"GET", "/api/v1/namespaces/ns1/configmaps", "fieldSelector=metadata.name%3Da%2Fb%2F..,metadata.namespace%3Dns1"},
		{"GET", "/api/v1/namespaces/ns1/configmaps", "fieldSelector=metadata.name%3Da%5C%2Cb"},
		{"GET", "/api/v1/namespaces/ns1/configmaps", "fieldSelector=metadata.name%3D%3Dx,metadata.name%3Dy"},
		{"GET", "/api/v1/namespaces/ns1/configmaps", "fieldSelector=%zz&watch=1"},
		{"GET", "/api/v1/watch/namespaces/ns1/configmaps/c1", ""},
		{"GET", "/api/v1/watch/namespaces/ns1/configmaps", "fieldSelector=metadata.name=x"},
		{"HEAD", "/api/v1/namespaces/ns1/configmaps/c1", ""},
		{"POST", "/api/v1/namespaces/ns1/configmaps", "dryRun=All"},
		{"PATCH", "/api/v1/namespaces/ns1/configmaps/c1", "fieldManager=x&force=true"},
		{"OPTIONS", "/api/v1/namespaces/ns1/configmaps", ""},
		{"GET", "/apis/apps/v1/namespaces/ns1/deployments/d1/scale", ""},
		{"PUT", "/apis/example.com/v2/widgets/w1/status", ""},
		{"POST", "/concord/v1/rewrite/core/configmaps", "limit=10"},
		{"POST", "/concord/v1/rewrite/apps/deployments", ""},
		{"POST", "/concord/v1/rewrite//deployments", ""},
		{"POST", "/concord/v1/rewrite/core/configmaps/x", ""},
		{"GET", "/concord/v1/rewrite/core/configmaps", ""},
		// Hostile paths: empty segments, dot segments, extra segments, no slash.
		{"GET", "", ""},
		{"GET", "/", ""},
		{"GET", "//api//v1//namespaces//x", ""},
		{"GET", "/api/v1/namespaces//pods", ""},
		{"GET", "/api/v1/pods//x", ""},
		{"DELETE", "/api/v1/namespaces/ns/pods/p/status/extra/more", ""},
		{"GET", "/api/../apis/v1/./pods/..", ""},
		{"GET", "api/v1/pods", ""},
		{"GET", "/apis//v1/pods", ""},
		{"GET", "/api/v1/watch", "watch=true"},
		{"GET", "/api/v1/watch/namespaces", ""},
		{"GET", "/api/v1/namespaces/ns/namespaces/x", ""},
		{"PUT", "/api/v1/namespaces/finalize", ""},
		{"GET", "/api/v1/namespaces/ünïcode/pöds/\u2028", ""},
		{"GET", "/api/v1/namespaces/\x00/pods/\xff", ""},
		{"get", "/api/v1/pods", ""},
		{"", "/api/v1/pods", ""},
		{"PROPFIND", "/apis/g/v/r/n/s", ""},
		{"ĞET", "/api/v1/pods", ""},
		{"GET", "/api/v1/" + strings.Repeat("a/", 200), ""},
	} {
		f.Add(s[0], s[1], s[2])
	}

	known := map[string]bool{
		"get": true, "list": true, "watch": true, "create": true, "update": true, "patch": true,
		"delete": true, "deletecollection": true, wire.RewriteVerb: true,
	}
	f.Fuzz(func(t *testing.T, method, path, rawQuery string) {
		r := &http.Request{Method: method, URL: &url.URL{Path: path, RawQuery: rawQuery}, Header: http.Header{}}
		info := Parse(r)
		if info == nil {
			t.Fatal("Parse returned nil")
		}
		if info.Path != path {
			t.Fatalf("Path = %q, want %q", info.Path, path)
		}
		lower := strings.ToLower(method)
		if !info.IsResourceRequest {
			if info.Verb != lower {
				t.Fatalf("non-resource request: Verb = %q, want %q", info.Verb, lower)
			}
			if info.Resource != "" || info.Name != "" || info.Namespace != "" || info.Subresource != "" {
				t.Fatalf("non-resource request names a resource: %+v", *info)
			}
			return
		}
		if !known[info.Verb] && info.Verb != lower {
			t.Fatalf("Verb %q is neither a Kubernetes verb nor the method %q", info.Verb, method)
		}
		if want := methodVerbs(method); want != nil && !want[info.Verb] {
			t.Fatalf("method %q gives verb %q", method, info.Verb)
		}
		if info.Verb == wire.RewriteVerb {
			if method != http.MethodPost || !strings.HasPrefix(path, wire.RewritePath) || info.Resource == "" {
				t.Fatalf("rewrite verb for %s %q: %+v", method, path, *info)
			}
		} else if info.APIPrefix != "api" && info.APIPrefix != "apis" {
			t.Fatalf("resource request with APIPrefix %q", info.APIPrefix)
		}
		for field, v := range map[string]string{
			"APIPrefix": info.APIPrefix, "APIGroup": info.APIGroup, "APIVersion": info.APIVersion,
			"Namespace": info.Namespace, "Resource": info.Resource, "Subresource": info.Subresource,
		} {
			if strings.Contains(v, "/") {
				t.Fatalf("%s %q holds a '/' (path %q)", field, v, path)
			}
		}
		// (A method of no meaning, "get" in lower case say, has its own name as verb,
		// with or without a name: the server answers it 405.)
		if methodVerbs(method) != nil && (info.Verb == "get" || info.Verb == "delete") && info.Name == "" {
			t.Fatalf("%s gives verb %s without a name: %+v", method, info.Verb, *info)
		}
		if strings.Contains(info.Name, "/") {
			switch info.Verb {
			case "list", "watch", "deletecollection":
			default:
				t.Fatalf("Name %q with a '/' for verb %s", info.Name, info.Verb)
			}
			sel, err := fields.ParseSelector(r.URL.Query().Get("fieldSelector"))
			if err != nil {
				t.Fatalf("Name %q with a '/' but the field selector does not parse: %v", info.Name, err)
			}
			if name, ok := sel.RequiresExactMatch("metadata.name"); !ok || name != info.Name {
				t.Fatalf("Name %q with a '/' is not what the field selector requires (%q, %v)", info.Name, name, ok)
			}
		}
		if info.Resource == "namespaces" && info.Name != "" && info.Namespace != info.Name && info.Verb != "list" && info.Verb != "watch" && info.Verb != "deletecollection" {
			t.Fatalf("namespace %q named %q", info.Namespace, info.Name)
		}
	})
}

// methodVerbs returns the Kubernetes verbs a resource request of method can have,
// nil for methods without one (their verb is the lower-cased method).
func methodVerbs(method string) map[string]bool {
	switch method {
	case http.MethodGet, http.MethodHead:
		return map[string]bool{"get": true, "list": true, "watch": true}
	case http.MethodPost:
		return map[string]bool{"create": true, wire.RewriteVerb: true}
	case http.MethodPut:
		return map[string]bool{"update": true}
	case http.MethodPatch:
		return map[string]bool{"patch": true}
	case http.MethodDelete:
		return map[string]bool{"delete": true, "deletecollection": true}
	}
	return nil
}
