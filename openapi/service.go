package openapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Paths the documents are served at.
const (
	V2Path = "/openapi/v2"
	V3Path = "/openapi/v3"
)

// Service builds the OpenAPI documents of a Registry's served group-versions and serves
// them. Documents are built when they are asked for: a request finds them current with
// the registry (and the aggregated APIs), rebuilding what changed since the last request
// first. A server that nobody asks for its documents, most of them, builds none. It is
// safe for concurrent use.
type Service struct {
	reg *registry.Registry
	v2  *handler.OpenAPIService
	v3  *handler3.OpenAPIService

	// aggregated counts the changes of the aggregated APIs' documents (SetAggregated).
	aggregated atomic.Uint64
	// current is what the served documents were built from; a build is due when the
	// registry or the aggregated documents moved past it.
	current atomic.Pointer[sources]

	// mu serializes builds; built is what the served documents were built from.
	mu    sync.Mutex
	built map[string][]*registry.Resource
	// v2Stale is set while the v2 document lags the v3 ones (its build failed).
	v2Stale bool
	// remotes are the aggregated group-versions' documents, published those of their
	// v3 documents served.
	remotes   map[schema.GroupVersion]remote
	published map[string]bool
	// served holds the v3 document paths ("apis/<group>/<version>", "api/v1") being
	// served, so that unknown ones are answered 404.
	served atomic.Pointer[map[string]bool]
}

// sources are the generations of what the documents are built from.
type sources struct {
	registry, aggregated uint64
}

// endpoint is one served version of one resource, the unit documents are built from.
type endpoint struct {
	res    *registry.Resource
	models *models
}

// New returns a Service that describes reg. Call InstallV2 and InstallV3 to serve its
// documents.
func New(reg *registry.Registry) *Service {
	s := &Service{
		reg:   reg,
		v2:    handler.NewOpenAPIService(emptySwagger()),
		v3:    handler3.NewOpenAPIService(),
		built: map[string][]*registry.Resource{},

		remotes: map[schema.GroupVersion]remote{},
	}
	s.served.Store(&map[string]bool{})
	return s
}

// InstallV2 serves the OpenAPI v2 document at /openapi/v2 on mux, as JSON or protobuf
// (application/com.github.proto-openapi.spec.v2@v1.0+protobuf, the form kubectl asks for)
// as the Accept header says, with an ETag.
func (s *Service) InstallV2(mux *http.ServeMux) {
	own := http.NewServeMux()
	s.v2.RegisterOpenAPIVersionedService(V2Path, own)
	mux.Handle(V2Path, s.fresh(own))
}

// InstallV3 serves on mux the OpenAPI v3 index at /openapi/v3 (every group-version's
// path with the hash of its document) and the document of each group-version at
// /openapi/v3/apis/<group>/<version> and /openapi/v3/api/v1, as JSON or protobuf, with
// ETags; requested with the hash the index gives, a document is cacheable for good.
// A group-version that is not served is answered 404.
func (s *Service) InstallV3(mux *http.ServeMux) {
	mux.Handle(V3Path, s.fresh(http.HandlerFunc(s.v3.HandleDiscovery)))
	mux.Handle(V3Path+"/", s.fresh(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !(*s.served.Load())[strings.TrimPrefix(r.URL.Path, V3Path+"/")] {
			http.NotFound(w, r)
			return
		}
		s.v3.HandleGroupVersion(w, r)
	})))
}

// fresh brings the documents up to date before next answers.
func (s *Service) fresh(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.refresh(r.Context())
		next.ServeHTTP(w, r)
	})
}

// refresh rebuilds the documents if the registry or the aggregated documents changed
// since they were built. Concurrent callers wait for one build.
func (s *Service) refresh(ctx context.Context) {
	want := sources{registry: s.reg.Generation(), aggregated: s.aggregated.Load()}
	if cur := s.current.Load(); cur != nil && *cur == want {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Read again under the lock: a build that finished meanwhile may have covered it.
	want = sources{registry: s.reg.Generation(), aggregated: s.aggregated.Load()}
	if cur := s.current.Load(); cur != nil && *cur == want {
		return
	}
	s.rebuild(ctx)
	s.current.Store(&want)
}

// rebuild brings the served documents in line with the registry. A group-version whose
// resources are the same objects as at the last build keeps its document. A document that
// fails to build is logged and the previous one kept. The v2 document is published before
// the v3 ones: a client that sees a change in v3 finds it in v2 too. Called with s.mu
// held.
func (s *Service) rebuild(ctx context.Context) {
	logger := klog.FromContext(ctx)
	start := time.Now()

	groups, err := s.snapshot(ctx)
	if err != nil {
		logger.Error(err, "Cannot build OpenAPI documents; serving the previous ones")
		return
	}
	type update struct {
		doc       *spec3.OpenAPI
		resources []*registry.Resource
	}
	updates := map[string]update{}
	for path, eps := range groups {
		resources := make([]*registry.Resource, len(eps))
		for i, ep := range eps {
			resources[i] = ep.res
		}
		if prev, ok := s.built[path]; ok && slices.Equal(prev, resources) {
			continue
		}
		doc, err := buildV3(eps)
		if err != nil {
			logger.Error(err, "Cannot build OpenAPI v3 document; serving the previous one", "groupVersion", path)
			continue
		}
		updates[path] = update{doc, resources}
	}
	var removed []string
	for path := range s.built {
		if _, ok := groups[path]; !ok {
			removed = append(removed, path)
		}
	}
	if len(updates) == 0 && len(removed) == 0 && !s.v2Stale {
		return
	}

	s.v2Stale = true
	doc, err := buildV2(groups)
	if err == nil {
		s.mergeRemotes(ctx, doc)
	}
	if err != nil {
		logger.Error(err, "Cannot build OpenAPI v2 document; serving the previous one")
	} else if err := s.v2.UpdateSpec(doc); err != nil {
		logger.Error(err, "Cannot serve OpenAPI v2 document; serving the previous one")
	} else {
		s.v2Stale = false
	}
	for path, u := range updates {
		s.v3.UpdateGroupVersion(path, u.doc)
		s.built[path] = u.resources
	}
	for _, path := range removed {
		s.v3.DeleteGroupVersion(path)
		delete(s.built, path)
	}
	served := make(map[string]bool, len(s.built))
	for path := range s.built {
		served[path] = true
	}
	s.publishRemotes(served)
	s.served.Store(&served)
	logger.V(4).Info("Built OpenAPI documents", "changed", len(updates), "removed", len(removed), "groupVersions", len(s.built), "duration", time.Since(start))
}

// snapshot returns the served endpoints of the registry by v3 document path, each list in
// group, plural order. Of two resources of one group-version with the same kind, only the
// first is published: their models and operations would collide.
func (s *Service) snapshot(ctx context.Context) (map[string][]*endpoint, error) {
	logger := klog.FromContext(ctx)
	groups := map[string][]*endpoint{}
	kinds := map[schema.GroupVersionKind]*registry.Resource{}
	for _, res := range s.reg.Resources() {
		for _, v := range res.ServedVersions() {
			m, err := modelsFor(res, v)
			if err != nil {
				return nil, err
			}
			if other, dup := kinds[m.gvk]; dup {
				logger.Info("Resource left out of OpenAPI: another resource has its kind", "kind", m.gvk, "resource", res.GroupResource(), "other", other.GroupResource())
				continue
			}
			kinds[m.gvk] = res
			path := documentPath(m.gvk.GroupVersion())
			groups[path] = append(groups[path], &endpoint{res: res, models: m})
		}
	}
	return groups, nil
}

// documentPath is where the v3 document of gv lives, under /openapi/v3/.
func documentPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

var info = &spec.Info{InfoProps: spec.InfoProps{Title: "Concord", Version: "unversioned"}}

func emptySwagger() *spec.Swagger {
	return &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger: "2.0",
		Info:    info,
		Paths:   &spec.Paths{Paths: map[string]spec.PathItem{}},
	}}
}

// buildV3 builds the OpenAPI v3 document of one group-version from its endpoints.
func buildV3(eps []*endpoint) (*spec3.OpenAPI, error) {
	gv := eps[0].models.gvk.GroupVersion()
	gvs := []schema.GroupVersion{gv}
	// As kube-apiserver's documents of built-in group-versions (those of Go types),
	// DeleteOptions and WatchEvent name core/v1 beside the document's group-version.
	if legacy := (schema.GroupVersion{Version: "v1"}); gv != legacy && slices.ContainsFunc(eps, func(ep *endpoint) bool { return ep.models.source != nil }) {
		gvs = []schema.GroupVersion{legacy, gv}
	}
	containers := make([]common.RouteContainer, 0, len(eps))
	for _, ep := range eps {
		containers = append(containers, routes(ep.models))
	}
	doc, err := builder3.BuildOpenAPISpecFromRoutes(containers, &common.OpenAPIV3Config{
		Info:                           info,
		CommonResponses:                map[int]*spec3.Response{http.StatusUnauthorized: {ResponseProps: spec3.ResponseProps{Description: "Unauthorized"}}},
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		GetDefinitionName:              definitionNamer(gvs, eps),
		Definitions:                    definitions(refsV3, eps),
	})
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI v3 document of %s: %w", gv, err)
	}
	return doc, nil
}

// buildV2 builds the OpenAPI v2 document of every served group-version, without
// defaults.
func buildV2(groups map[string][]*endpoint) (*spec.Swagger, error) {
	paths := make([]string, 0, len(groups))
	for path := range groups {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	var (
		eps        []*endpoint
		gvs        []schema.GroupVersion
		containers []common.RouteContainer
	)
	for _, path := range paths {
		gvs = append(gvs, groups[path][0].models.gvk.GroupVersion())
		for _, ep := range groups[path] {
			eps = append(eps, ep)
			containers = append(containers, routes(ep.models))
		}
	}
	if len(containers) == 0 {
		return emptySwagger(), nil
	}
	defs := definitions(refsV2, eps)
	doc, err := builder.BuildOpenAPISpecFromRoutes(containers, &common.Config{
		ProtocolList:                   []string{"https"},
		Info:                           info,
		CommonResponses:                map[int]spec.Response{http.StatusUnauthorized: {ResponseProps: spec.ResponseProps{Description: "Unauthorized"}}},
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		GetDefinitionName:              definitionNamer(gvs, eps),
		GetDefinitions:                 func(common.ReferenceCallback) map[string]common.OpenAPIDefinition { return defs },
	})
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI v2 document: %w", err)
	}
	// As kube-apiserver's v2 document, of built-in and custom resources alike, it has
	// no defaults (they are the v3 documents'); the shared models are copied, not changed.
	doc.Definitions = handler.PruneDefaults(doc.Definitions)
	return doc, nil
}
