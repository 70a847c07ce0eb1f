package builtin

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/concordproject/concord/registry"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

var jobsGR = schema.GroupResource{Group: "batch", Resource: "jobs"}

// The labels by which a Job's generated selector finds its pods: Kubernetes sets the
// batch.kubernetes.io ones and, for older clients, the legacy ones too.
const (
	jobControllerUIDLabel       = "batch.kubernetes.io/controller-uid"
	jobNameLabel                = "batch.kubernetes.io/job-name"
	legacyJobControllerUIDLabel = "controller-uid"
	legacyJobNameLabel          = "job-name"
)

// configureJobs gives batch Jobs what Kubernetes' API server (not its Job controller)
// gives them: the defaults of batch/v1 and of the pod template; unless
// spec.manualSelector, a selector generated from the Job's uid and the matching
// labels on the template; a selector that must select the template's labels and may
// not change; batch/v1's legacy garbage collection default (a Job deleted without a
// propagation policy orphans its pods); kubectl's columns. No controller runs them.
func configureJobs(res *registry.Resource) error {
	res.GarbageCollection.OrphanByDefault = []string{"v1"}
	res.Hooks = replicatedHooks(defaultJob, "job")
	res.Hooks.PrepareForCreate = func(_ context.Context, obj *unstructured.Unstructured) {
		defaultJob(obj.Object) // first: the Job's labels are the template's as written
		generateJobSelector(obj)
	}
	if res.HasPrinterColumns(jobColumns) {
		res.Hooks.TableCells = jobTableCells
	}
	return nil
}

// generateJobSelector selects the Job's pods by its uid, and labels its template so,
// unless the Job chose its selector itself (spec.manualSelector).
func generateJobSelector(obj *unstructured.Unstructured) {
	spec := child(obj.Object, "spec")
	if manual, _ := spec["manualSelector"].(bool); manual {
		return
	}
	uid, name := string(obj.GetUID()), obj.GetName()
	spec["selector"] = map[string]interface{}{"matchLabels": map[string]interface{}{jobControllerUIDLabel: uid}}
	labels := child(child(child(spec, "template"), "metadata"), "labels")
	for k, v := range map[string]string{
		jobControllerUIDLabel: uid, legacyJobControllerUIDLabel: uid, jobNameLabel: name, legacyJobNameLabel: name,
	} {
		setDefault(labels, k, v)
	}
}

// defaultJob sets batch/v1's defaults of a Job and of its pod template.
func defaultJob(obj map[string]interface{}) {
	spec := child(obj, "spec")
	if spec["completions"] == nil && spec["parallelism"] == nil {
		spec["completions"] = int64(1)
	}
	setDefault(spec, "parallelism", int64(1))
	if spec["backoffLimitPerIndex"] != nil {
		setDefault(spec, "backoffLimit", int64(math.MaxInt32))
	}
	setDefault(spec, "backoffLimit", int64(6))
	setDefault(spec, "completionMode", "NonIndexed")
	setDefault(spec, "suspend", false)
	if spec["podFailurePolicy"] != nil {
		setDefault(spec, "podReplacementPolicy", "Failed")
	}
	setDefault(spec, "podReplacementPolicy", "TerminatingOrFailed")
	template := child(spec, "template")
	if meta := child(obj, "metadata"); meta["labels"] == nil {
		if labels, ok := child(template, "metadata")["labels"].(map[string]interface{}); ok {
			meta["labels"] = runtime.DeepCopyJSONValue(labels)
		}
	}
	defaultPodSpec(child(template, "spec"))
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
