package builtin

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/concordproject/concord/registry"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
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
// not change; the rest of the spec's update rules (validateJobSpecUpdate); batch/v1's
// legacy garbage collection default (a Job deleted without a propagation policy
// orphans its pods); kubectl's columns. No controller runs them.
func configureJobs(res *registry.Resource) error {
	res.GarbageCollection.OrphanByDefault = []string{"v1"}
	res.Hooks = replicatedHooks(defaultJob, "job")
	res.Hooks.PrepareForCreate = func(_ context.Context, obj *unstructured.Unstructured) {
		defaultJob(obj.Object) // first: the Job's labels are the template's as written
		generateJobSelector(obj)
	}
	validateSelectorUpdate := res.Hooks.ValidateUpdate
	res.Hooks.ValidateUpdate = func(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
		return append(validateSelectorUpdate(ctx, obj, old), validateJobSpecUpdate(obj.Object, old.Object)...)
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

// jobImmutableFields are the fields of a Job's spec that never change once set.
var jobImmutableFields = []string{"completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"}

// validateJobSpecUpdate checks an update of a Job's spec as Kubernetes does: the
// fields above are immutable; so is completions, but for an Indexed Job that changes
// it in tandem with parallelism (elastic Indexed Jobs); and so is the pod template,
// but for the scheduling directives of a Job that is suspended and never started.
func validateJobSpecUpdate(obj, old map[string]interface{}) field.ErrorList {
	spec, oldSpec := mapAt(obj, "spec"), mapAt(old, "spec")
	path := field.NewPath("spec")
	var errs field.ErrorList
	for _, f := range append([]string{"completions"}, jobImmutableFields...) {
		if reflect.DeepEqual(spec[f], oldSpec[f]) {
			continue
		}
		if f == "completions" && spec["completionMode"] == "Indexed" && spec[f] != nil {
			if !reflect.DeepEqual(spec[f], spec["parallelism"]) {
				errs = append(errs, field.Invalid(path.Child(f), spec[f], "can only be modified in tandem with spec.parallelism"))
			}
			continue
		}
		errs = append(errs, field.Invalid(path.Child(f), spec[f], "field is immutable"))
	}
	template, _ := spec["template"].(map[string]interface{})
	oldTemplate, _ := runtime.DeepCopyJSONValue(oldSpec["template"]).(map[string]interface{})
	suspended, _ := oldSpec["suspend"].(bool)
	if started, _, _ := unstructured.NestedString(old, "status", "startTime"); suspended && started == "" && template != nil && oldTemplate != nil {
		allowSchedulingChanges(template, oldTemplate)
	}
	if !reflect.DeepEqual(template, oldTemplate) {
		errs = append(errs, field.Invalid(path.Child("template"), template, "field is immutable"))
	}
	return errs
}

// allowSchedulingChanges copies onto old, a copy of a Job's former pod template, what a
// suspended Job that never started may change in its template: labels, annotations,
// node selector, tolerations, scheduling gates and node affinity (an affinity that
// held nothing else may go).
func allowSchedulingChanges(template, old map[string]interface{}) {
	copyField := func(dst, src map[string]interface{}, name string) {
		if v, ok := src[name]; ok {
			dst[name] = v
		} else {
			delete(dst, name)
		}
	}
	meta, oldMeta := mapAt(template, "metadata"), child(old, "metadata")
	copyField(oldMeta, meta, "labels")
	copyField(oldMeta, meta, "annotations")
	spec, oldSpec := mapAt(template, "spec"), child(old, "spec")
	for _, f := range []string{"nodeSelector", "tolerations", "schedulingGates"} {
		copyField(oldSpec, spec, f)
	}
	affinity, oldAffinity := mapAt(spec, "affinity"), mapAt(oldSpec, "affinity")
	switch {
	case affinity == nil && oldAffinity != nil:
		delete(oldAffinity, "nodeAffinity")
		if len(oldAffinity) == 0 {
			delete(oldSpec, "affinity")
		}
	case affinity != nil && oldAffinity == nil:
		oldSpec["affinity"] = map[string]interface{}{}
		copyField(oldSpec["affinity"].(map[string]interface{}), affinity, "nodeAffinity")
	case affinity != nil:
		copyField(oldAffinity, affinity, "nodeAffinity")
	}
}

// mapAt returns the object at obj[key], nil if there is none; unlike child, it never
// adds one.
func mapAt(obj map[string]interface{}, key string) map[string]interface{} {
	m, _ := obj[key].(map[string]interface{})
	return m
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
