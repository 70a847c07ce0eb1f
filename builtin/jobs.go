package builtin

import (
	"fmt"
	"time"

	"github.com/concordproject/concord/registry"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

var jobsGR = schema.GroupResource{Group: "batch", Resource: "jobs"}

// configureJobs gives batch Jobs batch/v1's legacy garbage collection default (a Job
// deleted without a propagation policy orphans its pods) and kubectl's columns. Their
// defaults, generated selector and validation are Kubernetes' (package
// kubesemantics). No controller runs them.
func configureJobs(res *registry.Resource) error {
	res.GarbageCollection.OrphanByDefault = []string{"v1"}
	if res.HasPrinterColumns(jobColumns) {
		res.Hooks = &registry.Hooks{TableCells: jobTableCells}
	}
	return nil
}

// jobColumns are the printer columns jobTableCells fills, the catalog's.
var jobColumns = []string{"Status", "Completions", "Duration", "Age"}

// jobTableCells prints a Job's STATUS, COMPLETIONS (succeeded/wanted) and DURATION as
// kubectl does.
func jobTableCells(obj *unstructured.Unstructured) []interface{} {
	succeeded, _, _ := unstructured.NestedInt64(obj.Object, "status", "succeeded")
	want, bounded, _ := unstructured.NestedInt64(obj.Object, "spec", "completions")
	parallelism, _, _ := unstructured.NestedInt64(obj.Object, "spec", "parallelism")
	var completions string
	switch {
	case bounded:
		completions = fmt.Sprintf("%d/%d", succeeded, want)
	case parallelism > 1:
		completions = fmt.Sprintf("%d/1 of %d", succeeded, parallelism)
	default:
		completions = fmt.Sprintf("%d/1", succeeded)
	}
	var took string
	if start := timeField(obj, "startTime"); !start.IsZero() {
		end := timeField(obj, "completionTime")
		if end.IsZero() {
			end = time.Now()
		}
		took = duration.HumanDuration(end.Sub(start))
	}
	return []interface{}{jobStatus(obj), completions, took, metatable.ConvertToHumanReadableDateType(obj.GetCreationTimestamp())}
}

// jobStatus is kubectl's STATUS of a Job: its terminal or suspended condition, else
// Terminating or Running.
func jobStatus(obj *unstructured.Unstructured) string {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	holds := func(typ string) bool {
		for _, c := range conditions {
			m, _ := c.(map[string]interface{})
			if m["type"] == typ && m["status"] == "True" {
				return true
			}
		}
		return false
	}
	for _, typ := range []string{"Complete", "Failed", "Suspended", "FailureTarget", "SuccessCriteriaMet"} {
		if holds(typ) {
			return typ
		}
	}
	if obj.GetDeletionTimestamp() != nil {
		return "Terminating"
	}
	return "Running"
}

// timeField reads the RFC 3339 time status.<name> (zero if absent or malformed).
func timeField(obj *unstructured.Unstructured, name string) time.Time {
	s, _, _ := unstructured.NestedString(obj.Object, "status", name)
	t, _ := time.Parse(time.RFC3339, s)
	return t
}
