package quota

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

// countFunc counts the objects of a resource in a namespace.
type countFunc func(gr schema.GroupResource, namespace string) (int64, error)

// objectCountEvaluators returns the evaluators of the legacy counts (each also
// answers to its count/ name), counting through count (nil: evaluators that cannot
// count, for admission, which only measures the object a request writes). Other
// resources get an object-count evaluator when first needed.
func objectCountEvaluators(count countFunc) []quota.Evaluator {
	out := make([]quota.Evaluator, 0, len(legacyCounts))
	for gr, alias := range legacyCounts {
		e := generic.NewObjectCountEvaluator(gr, nil, alias)
		if count != nil {
			e = countedBy(e, count)
		}
		out = append(out, e)
	}
	return out
}

// countingEvaluator is k8s.io/apiserver's object-count evaluator with its usage
// counted by count instead of listed.
type countingEvaluator struct {
	quota.Evaluator
	count countFunc
}

func countedBy(e quota.Evaluator, count countFunc) quota.Evaluator {
	return countingEvaluator{Evaluator: e, count: count}
}

// UsageStats counts the namespace's objects for each of opts.Resources. As in
// k8s.io/apiserver's evaluator, objects match no scope: a quota with scopes counts
// none.
func (e countingEvaluator) UsageStats(opts quota.UsageStatsOptions) (quota.UsageStats, error) {
	stats := quota.UsageStats{Used: corev1.ResourceList{}}
	var n int64
	if len(opts.Scopes) == 0 && (opts.ScopeSelector == nil || len(opts.ScopeSelector.MatchExpressions) == 0) {
		var err error
		if n, err = e.count(e.GroupResource(), opts.Namespace); err != nil {
			return stats, err
		}
	}
	for _, name := range opts.Resources {
		stats.Used[name] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return stats, nil
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
