package quota

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
)

// IgnoredResources are the resources quota never counts, as in Kubernetes: those
// not stored, and events, which were never counted.
var IgnoredResources = map[schema.GroupResource]struct{}{
	{Resource: "bindings"}:                                                 {},
	{Resource: "componentstatuses"}:                                        {},
	{Resource: "events"}:                                                   {},
	{Group: "events.k8s.io", Resource: "events"}:                           {},
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}:             {},
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:       {},
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}:      {},
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}:  {},
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}: {},
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:   {},
}

// legacyCounts are the object counts quotas name without the count/ prefix, from
// before count/<resource>.<group> existed.
var legacyCounts = map[schema.GroupResource]corev1.ResourceName{
	{Resource: "configmaps"}:             corev1.ResourceConfigMaps,
	{Resource: "resourcequotas"}:         corev1.ResourceQuotas,
	{Resource: "replicationcontrollers"}: corev1.ResourceReplicationControllers,
	{Resource: "secrets"}:                corev1.ResourceSecrets,
}

// objectCountEvaluators returns the evaluators of the legacy counts (each also
// answers to its count/ name), listing through listFor (nil: evaluators that
// cannot list, for admission). Other resources get an object-count evaluator when
// first needed.
func objectCountEvaluators(listFor func(schema.GroupResource) generic.ListFuncByNamespace) []quota.Evaluator {
	out := make([]quota.Evaluator, 0, len(legacyCounts))
	for gr, alias := range legacyCounts {
		var list generic.ListFuncByNamespace
		if listFor != nil {
			list = listFor(gr)
		}
		out = append(out, generic.NewObjectCountEvaluator(gr, list, alias))
	}
	return out
}

// countedResource returns the resource a quota resource name counts objects of
// (count/widgets.example.com, or a legacy name such as configmaps), and false for
// names that are not object counts (cpu, requests.storage).
func countedResource(name corev1.ResourceName) (schema.GroupResource, bool) {
	if rest, ok := strings.CutPrefix(string(name), "count/"); ok && rest != "" {
		return schema.ParseGroupResource(rest), true
	}
	for gr, alias := range legacyCounts {
		if alias == name {
			return gr, true
		}
	}
	return schema.GroupResource{}, false
}
