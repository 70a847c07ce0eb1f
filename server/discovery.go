package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/respond"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// verbs returns the verbs res serves (subresource "") or one of its subresources.
func verbs(res *registry.Resource, subresource string) metav1.Verbs {
	return slices.Clone(res.ServedVerbs(subresource))
}

// subresource is one subresource of a served version, as discovery lists it.
type subresource struct {
	name string
	kind metav1.GroupVersionKind
}

// subresources returns the subresources res serves at version: a namespace's
// finalize, status, scale, its semantics' subresources, then its actions and connect
// subresources, sorted.
func subresources(res *registry.Resource, version string) []subresource {
	v := res.ServedVersion(version)
	own := metav1.GroupVersionKind{Group: res.Group, Version: version, Kind: res.Names.Kind}
	var out []subresource
	if res.Group == "" && res.Names.Plural == "namespaces" {
		out = append(out, subresource{name: "finalize", kind: own})
	}
	if v.Subresources != nil && v.Subresources.Status != nil {
		out = append(out, subresource{name: "status", kind: own})
	}
	if v.Subresources != nil && v.Subresources.Scale != nil {
		out = append(out, subresource{name: "scale", kind: metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}})
	}
	if res.Semantics != nil {
		for _, name := range res.Semantics.Subresources {
			out = append(out, subresource{name: name, kind: own})
		}
	}
	var served []subresource
	for _, name := range actionNames(res) {
		a, _ := res.Action(name)
		served = append(served, subresource{name: name, kind: metav1.GroupVersionKind{Group: a.Kind.Group, Version: a.Kind.Version, Kind: a.Kind.Kind}})
	}
	for _, name := range connectNames(res) {
		c, _ := res.Connect(name)
		served = append(served, subresource{name: name, kind: metav1.GroupVersionKind{Group: c.Kind.Group, Version: c.Kind.Version, Kind: c.Kind.Kind}})
	}
	slices.SortFunc(served, func(a, b subresource) int { return strings.Compare(a.name, b.name) })
	return append(out, served...)
}

// serveDiscovery answers /api, /api/v1, /apis, /apis/<group> and
// /apis/<group>/<version> from the registry as it is now, and aggregated discovery
// (apidiscovery.k8s.io v2 or v2beta1) on /api and /apis when Accept asks for it.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request, info *request.Info) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		respond.Error(w, r, apierrors.NewMethodNotSupported(schema.GroupResource{}, r.Method))
		return
	}
	parts := splitPath(r.URL.Path)
	resources := s.cfg.Registry.Resources()
	switch {
	case len(parts) == 1:
		if version, ctype, ok := wantsAggregated(r); ok {
			s.serveAggregated(w, r, parts[0] == "api", resources, version, ctype)
			return
		}
		if parts[0] == "api" {
			respond.Object(w, r, http.StatusOK, &metav1.APIVersions{
				TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
				Versions: []string{"v1"},
				ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{
					ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host,
				}},
			})
			return
		}
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
		for _, g := range s.allGroups(resources) {
			if g.Name != "" {
				list.Groups = append(list.Groups, g)
			}
		}
		respond.Object(w, r, http.StatusOK, list)
	case parts[0] == "apis" && len(parts) == 2:
		for _, g := range s.allGroups(resources) {
			if g.Name == parts[1] && g.Name != "" {
				g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
				respond.Object(w, r, http.StatusOK, &g)
				return
			}
		}
		respond.Error(w, r, notFoundPath(info))
	default:
		group, version := info.APIGroup, info.APIVersion
		list := &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: metav1.GroupVersion{Group: group, Version: version}.String(),
		}
		for _, res := range resources {
			if res.Group == group && res.ServedVersion(version) != nil {
				list.APIResources = append(list.APIResources, apiResources(res, version)...)
			}
		}
		if list.APIResources == nil {
			respond.Error(w, r, notFoundPath(info))
			return
		}
		respond.Object(w, r, http.StatusOK, list)
	}
}

// proxied returns the handler of a request for a group-version another server
// serves, or nil.
func (s *Server) proxied(info *request.Info) http.Handler {
	if s.cfg.Aggregated == nil || info.APIPrefix != "apis" || info.APIGroup == "" || info.APIVersion == "" {
		return nil
	}
	return s.cfg.Aggregated.Proxy(schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion})
}

// remoteDiscovery returns the aggregated discovery of the group-versions other
// servers serve.
func (s *Server) remoteDiscovery() []apidiscoveryv2.APIGroupDiscovery {
	if s.cfg.Aggregated == nil {
		return nil
	}
	return s.cfg.Aggregated.Discovery()
}

// allGroups returns the served groups (see groups), then those other servers serve:
// a group served here too gets their versions after its own.
func (s *Server) allGroups(resources []*registry.Resource) []metav1.APIGroup {
	out := groups(resources)
	for _, rg := range s.remoteDiscovery() {
		i := slices.IndexFunc(out, func(g metav1.APIGroup) bool { return g.Name == rg.Name })
		if i < 0 {
			out = append(out, metav1.APIGroup{Name: rg.Name})
			i = len(out) - 1
		}
		for _, v := range rg.Versions {
			out[i].Versions = append(out[i].Versions, metav1.GroupVersionForDiscovery{
				GroupVersion: metav1.GroupVersion{Group: rg.Name, Version: v.Version}.String(), Version: v.Version,
			})
		}
		if out[i].PreferredVersion.Version == "" && len(out[i].Versions) > 0 {
			out[i].PreferredVersion = out[i].Versions[0]
		}
	}
	return out
}

// groups returns the served groups, the core group first, then by name; each group's
// versions newest first, the newest being preferred.
func groups(resources []*registry.Resource) []metav1.APIGroup {
	versions := map[string][]string{}
	var names []string
	for _, res := range resources {
		if _, ok := versions[res.Group]; !ok {
			names = append(names, res.Group)
		}
		for _, v := range res.ServedVersions() {
			if !slices.Contains(versions[res.Group], v) {
				versions[res.Group] = append(versions[res.Group], v)
			}
		}
	}
	slices.Sort(names)
	var out []metav1.APIGroup
	for _, name := range names {
		vs := versions[name]
		if len(vs) == 0 {
			continue
		}
		registry.SortVersions(vs)
		g := metav1.APIGroup{Name: name}
		for _, v := range vs {
			g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{
				GroupVersion: metav1.GroupVersion{Group: name, Version: v}.String(), Version: v,
			})
		}
		g.PreferredVersion = g.Versions[0]
		out = append(out, g)
	}
	return out
}

// apiResources lists a resource and its subresources as served at version.
func apiResources(res *registry.Resource, version string) []metav1.APIResource {
	main := metav1.APIResource{
		Name:         res.Names.Plural,
		SingularName: res.Names.Singular,
		Namespaced:   res.Namespaced,
		Kind:         res.Names.Kind,
		Verbs:        verbs(res, ""),
		ShortNames:   res.Names.ShortNames,
		Categories:   res.Names.Categories,
	}
	if res.Persisted() { // a review is answered, never stored: it has no storage version
		main.StorageVersionHash = res.StorageVersionHash()
	}
	out := []metav1.APIResource{main}
	for _, sub := range subresources(res, version) {
		r := metav1.APIResource{Name: res.Names.Plural + "/" + sub.name, Namespaced: res.Namespaced, Kind: sub.kind.Kind, Verbs: verbs(res, sub.name)}
		if sub.kind.Group != res.Group || sub.kind.Version != version {
			r.Group, r.Version = sub.kind.Group, sub.kind.Version
		}
		out = append(out, r)
	}
	return out
}

// actionNames returns the names of res's action subresources, sorted.
func actionNames(res *registry.Resource) []string {
	if res.Hooks == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(res.Hooks.Actions))
}

// connectNames returns the names of res's connect subresources, sorted.
func connectNames(res *registry.Resource) []string {
	if res.Hooks == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(res.Hooks.Connects))
}

// wantsAggregated reports whether Accept asks for aggregated discovery first among
// what it accepts, and which version of it.
func wantsAggregated(r *http.Request) (version, contentType string, ok bool) {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		part = strings.TrimSpace(part)
		mt, params, err := mime.ParseMediaType(part)
		if err != nil {
			continue
		}
		if mt == "application/json" && params["g"] == "apidiscovery.k8s.io" && params["as"] == "APIGroupDiscoveryList" &&
			(params["v"] == "v2" || params["v"] == "v2beta1") {
			return params["v"], "application/json;g=apidiscovery.k8s.io;v=" + params["v"] + ";as=APIGroupDiscoveryList", true
		}
		if mt == "application/json" || mt == "*/*" {
			return "", "", false
		}
	}
	return "", "", false
}

// serveAggregated answers aggregated discovery for the core group (/api) or all other
// groups (/apis), with an ETag so clients can revalidate.
func (s *Server) serveAggregated(w http.ResponseWriter, r *http.Request, core bool, resources []*registry.Resource, version, ctype string) {
	list := &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/" + version}}
	for _, g := range groups(resources) {
		if (g.Name == "") != core {
			continue
		}
		gd := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.Name}}
		for _, gv := range g.Versions {
			vd := apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
			for _, res := range resources {
				v := res.ServedVersion(gv.Version)
				if res.Group != g.Name || v == nil {
					continue
				}
				scope := apidiscoveryv2.ScopeCluster
				if res.Namespaced {
					scope = apidiscoveryv2.ScopeNamespace
				}
				rd := apidiscoveryv2.APIResourceDiscovery{
					Resource:         res.Names.Plural,
					ResponseKind:     &metav1.GroupVersionKind{Group: res.Group, Version: gv.Version, Kind: res.Names.Kind},
					Scope:            scope,
					SingularResource: res.Names.Singular,
					Verbs:            verbs(res, ""),
					ShortNames:       res.Names.ShortNames,
					Categories:       res.Names.Categories,
				}
				for _, sub := range subresources(res, gv.Version) {
					rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{
						Subresource: sub.name, ResponseKind: &sub.kind, Verbs: verbs(res, sub.name),
					})
				}
				vd.Resources = append(vd.Resources, rd)
			}
			gd.Versions = append(gd.Versions, vd)
		}
		list.Items = append(list.Items, gd)
	}
	if !core {
		list.Items = mergeDiscovery(list.Items, s.remoteDiscovery())
	}
	body, err := json.Marshal(list)
	if err != nil {
		respond.Error(w, r, apierrors.NewInternalError(err))
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	w.Header().Set("Vary", "Accept")
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// mergeDiscovery adds remote groups to local ones: a group both serve gets the
// remote versions after its own.
func mergeDiscovery(local, remote []apidiscoveryv2.APIGroupDiscovery) []apidiscoveryv2.APIGroupDiscovery {
	for _, rg := range remote {
		i := slices.IndexFunc(local, func(g apidiscoveryv2.APIGroupDiscovery) bool { return g.Name == rg.Name })
		if i < 0 {
			local = append(local, rg)
			continue
		}
		local[i].Versions = append(local[i].Versions, rg.Versions...)
	}
	return local
}
