package request_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/concordproject/concord/request"
	"github.com/google/go-cmp/cmp"
)

// Like k8s.io/apiserver's requestinfo_test: method and URL in, what the chain decides
// from out.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		method, url string
		want        request.Info
	}{
		// Non-resource requests.
		{"GET", "/healthz", request.Info{Verb: "get"}},
		{"GET", "/version", request.Info{Verb: "get"}},
		{"GET", "/openapi/v3", request.Info{Verb: "get"}},
		{"GET", "/api", request.Info{Verb: "get"}},
		{"GET", "/api/v1", request.Info{Verb: "get", APIPrefix: "api", APIVersion: "v1"}},
		{"GET", "/apis", request.Info{Verb: "get"}},
		{"GET", "/apis/apps", request.Info{Verb: "get", APIPrefix: "apis"}},
		{"GET", "/apis/apps/v1", request.Info{Verb: "get", APIPrefix: "apis", APIGroup: "apps", APIVersion: "v1"}},
		{"POST", "/debug/pprof/profile", request.Info{Verb: "post"}},

		// Core group.
		{"GET", "/api/v1/namespaces", res("list", "api", "", "v1", "", "namespaces", "", "")},
		{"GET", "/api/v1/namespaces/ns1", res("get", "api", "", "v1", "ns1", "namespaces", "", "ns1")},
		{"PUT", "/api/v1/namespaces/ns1/status", res("update", "api", "", "v1", "ns1", "namespaces", "status", "ns1")},
		{"PUT", "/api/v1/namespaces/ns1/finalize", res("update", "api", "", "v1", "ns1", "namespaces", "finalize", "ns1")},
		{"DELETE", "/api/v1/namespaces/ns1", res("delete", "api", "", "v1", "ns1", "namespaces", "", "ns1")},
		// A collection request that selects one object by name names it.
		{"GET", "/api/v1/namespaces/kube-system/configmaps?watch=true&fieldSelector=metadata.name%3Dauth", res("watch", "api", "", "v1", "kube-system", "configmaps", "", "auth")},
		{"GET", "/api/v1/namespaces/kube-system/configmaps?fieldSelector=metadata.name%3Dauth", res("list", "api", "", "v1", "kube-system", "configmaps", "", "auth")},
		{"DELETE", "/api/v1/namespaces/ns1/configmaps?fieldSelector=metadata.name%3Da", res("deletecollection", "api", "", "v1", "ns1", "configmaps", "", "a")},
		{"GET", "/api/v1/namespaces/ns1/configmaps?fieldSelector=metadata.name%21%3Da", res("list", "api", "", "v1", "ns1", "configmaps", "", "")},
		{"GET", "/api/v1/namespaces/ns1/configmaps?fieldSelector=metadata.name%3Da,metadata.namespace%3Dns1", res("list", "api", "", "v1", "ns1", "configmaps", "", "a")},
		{"GET", "/api/v1/configmaps", res("list", "api", "", "v1", "", "configmaps", "", "")},
		{"GET", "/api/v1/namespaces/ns1/configmaps", res("list", "api", "", "v1", "ns1", "configmaps", "", "")},
		{"GET", "/api/v1/namespaces/ns1/configmaps?watch=true", res("watch", "api", "", "v1", "ns1", "configmaps", "", "")},
		{"GET", "/api/v1/namespaces/ns1/configmaps?watch=1", res("watch", "api", "", "v1", "ns1", "configmaps", "", "")},
		{"GET", "/api/v1/namespaces/ns1/configmaps?watch=false", res("list", "api", "", "v1", "ns1", "configmaps", "", "")},
		{"GET", "/api/v1/watch/namespaces/ns1/configmaps", res("watch", "api", "", "v1", "ns1", "configmaps", "", "")},
		{"GET", "/api/v1/watch/namespaces/ns1/configmaps/c1", res("watch", "api", "", "v1", "ns1", "configmaps", "", "c1")},
		{"GET", "/api/v1/namespaces/ns1/configmaps/c1", res("get", "api", "", "v1", "ns1", "configmaps", "", "c1")},
		{"GET", "/api/v1/namespaces/ns1/configmaps/c1?watch=true", res("watch", "api", "", "v1", "ns1", "configmaps", "", "c1")},
		{"HEAD", "/api/v1/namespaces/ns1/configmaps/c1", res("get", "api", "", "v1", "ns1", "configmaps", "", "c1")},
		{"POST", "/api/v1/namespaces/ns1/configmaps", res("create", "api", "", "v1", "ns1", "configmaps", "", "")},
		{"PUT", "/api/v1/namespaces/ns1/configmaps/c1", res("update", "api", "", "v1", "ns1", "configmaps", "", "c1")},
		{"PATCH", "/api/v1/namespaces/ns1/configmaps/c1", res("patch", "api", "", "v1", "ns1", "configmaps", "", "c1")},
		{"DELETE", "/api/v1/namespaces/ns1/configmaps/c1", res("delete", "api", "", "v1", "ns1", "configmaps", "", "c1")},
		{"DELETE", "/api/v1/namespaces/ns1/configmaps", res("deletecollection", "api", "", "v1", "ns1", "configmaps", "", "")},
		{"OPTIONS", "/api/v1/namespaces/ns1/configmaps", res("options", "api", "", "v1", "ns1", "configmaps", "", "")},

		// Named groups, subresources, cluster scope.
		{"GET", "/apis/apps/v1/namespaces/ns1/deployments/d1/scale", res("get", "apis", "apps", "v1", "ns1", "deployments", "scale", "d1")},
		{"PUT", "/apis/example.com/v2/widgets/w1/status", res("update", "apis", "example.com", "v2", "", "widgets", "status", "w1")},
		{"GET", "/apis/internal.apiserver.k8s.io/v1alpha1/storageversions", res("list", "apis", "internal.apiserver.k8s.io", "v1alpha1", "", "storageversions", "", "")},

		// A proxy's path beyond its subresource, with the request's trailing slash.
		{"GET", "/api/v1/namespaces/ns1/pods/p1/proxy", res("get", "api", "", "v1", "ns1", "pods", "proxy", "p1")},
		{"GET", "/api/v1/namespaces/ns1/pods/p1/proxy/", subpath(res("get", "api", "", "v1", "ns1", "pods", "proxy", "p1"), "/")},
		{"POST", "/api/v1/namespaces/ns1/services/https:s1:443/proxy/a/b/?q=1", subpath(res("create", "api", "", "v1", "ns1", "services", "proxy", "https:s1:443"), "/a/b/")},
		{"GET", "/api/v1/nodes/n1:10255/proxy/metrics", subpath(res("get", "api", "", "v1", "", "nodes", "proxy", "n1:10255"), "/metrics")},

		// The storage-migration rewrite: a write of the resource.
		{"POST", "/concord/v1/rewrite/core/configmaps", request.Info{IsResourceRequest: true, Verb: "rewrite", Resource: "configmaps"}},
		{"POST", "/concord/v1/rewrite/apps/deployments?limit=10", request.Info{IsResourceRequest: true, Verb: "rewrite", APIGroup: "apps", Resource: "deployments"}},
		{"GET", "/concord/v1/rewrite/core/configmaps", request.Info{Verb: "get"}},
		{"POST", "/concord/v1/rewrite/core", request.Info{Verb: "post"}},
		{"POST", "/concord/v1/rewrite/core/configmaps/x", request.Info{Verb: "post"}},
	} {
		r := httptest.NewRequest(tc.method, tc.url, nil)
		got := request.Parse(r)
		want := tc.want
		want.Path = r.URL.Path
		if diff := cmp.Diff(want, *got); diff != "" {
			t.Errorf("%s %s: (-want +got)\n%s", tc.method, tc.url, diff)
		}
	}
}

func res(verb, prefix, group, version, ns, resource, sub, name string) request.Info {
	return request.Info{IsResourceRequest: true, Verb: verb, APIPrefix: prefix, APIGroup: group, APIVersion: version,
		Namespace: ns, Resource: resource, Subresource: sub, Name: name}
}

func TestContext(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
	if _, ok := request.InfoFrom(r.Context()); ok {
		t.Fatal("a fresh context carries request info")
	}
	info := request.Parse(r)
	got, ok := request.InfoFrom(request.WithInfo(r.Context(), info))
	if !ok || got != info {
		t.Fatalf("InfoFrom = %v, %v", got, ok)
	}
}

// subpath is info with the path beyond its subresource.
func subpath(info request.Info, p string) request.Info {
	info.Subpath = p
	return info
}
