package openapi

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/aggregator"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// remote is the OpenAPI of a group-version another server serves, as its backend
// publishes it.
type remote struct {
	v2 *spec.Swagger  // the backend's v2 document, its group's paths only; nil if none
	v3 *spec3.OpenAPI // the backend's v3 document of the group-version; nil if none
}

// SetAggregated serves the OpenAPI of group-version gv, which another server serves
// (an aggregated API): v3, its document, at /openapi/v3/apis/<group>/<version>; v2, the
// backend's v2 document, filtered to gv's group, merged into /openapi/v2 (definitions
// that clash with other documents' renamed). Both nil stop serving them. The next
// request for a document sees the change.
func (s *Service) SetAggregated(_ context.Context, gv schema.GroupVersion, v2 *spec.Swagger, v3 *spec3.OpenAPI) {
	if v2 != nil {
		v2 = aggregator.FilterSpecByPathsWithoutSideEffects(v2, []string{"/apis/" + gv.Group + "/"})
	}
	s.mu.Lock()
	if v2 == nil && v3 == nil {
		delete(s.remotes, gv)
	} else {
		s.remotes[gv] = remote{v2: v2, v3: v3}
	}
	s.v2Stale = true // merge again
	s.aggregated.Add(1)
	s.mu.Unlock()
}

// mergeRemotes adds the aggregated group-versions' v2 documents to doc. Called with
// s.mu held.
func (s *Service) mergeRemotes(ctx context.Context, doc *spec.Swagger) {
	for gv, r := range s.remotes {
		if r.v2 == nil {
			continue
		}
		if err := aggregator.MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters(doc, r.v2); err != nil {
			klog.FromContext(ctx).Error(err, "Cannot merge the OpenAPI v2 document of an aggregated API", "groupVersion", gv)
		}
	}
}

// publishRemotes serves the aggregated group-versions' v3 documents, adds their paths
// to served, and stops serving those no longer aggregated. Called with s.mu held.
func (s *Service) publishRemotes(served map[string]bool) {
	published := map[string]bool{}
	for gv, r := range s.remotes {
		path := documentPath(gv)
		if r.v3 == nil || served[path] {
			continue // a local group-version wins
		}
		s.v3.UpdateGroupVersion(path, r.v3)
		served[path], published[path] = true, true
	}
	for path := range s.published {
		if !published[path] && !served[path] {
			s.v3.DeleteGroupVersion(path)
		}
	}
	s.published = published
}
