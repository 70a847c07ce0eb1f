package kubesemantics

import (
	"context"
	"fmt"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/api/job"
	"k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/batch"
	batchvalidation "k8s.io/kubernetes/pkg/apis/batch/validation"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/ptr"

	_ "k8s.io/kubernetes/pkg/apis/batch/install" // batch's types, defaults and conversions
)

func init() { groups = append(groups, batchKinds) }

// batchKinds are the strategies of group batch.
func batchKinds() map[schema.GroupResource]strategy {
	return map[schema.GroupResource]strategy{
		{Group: "batch", Resource: "jobs"}:     jobKind().erase(),
		{Group: "batch", Resource: "cronjobs"}: cronJobKind().erase(),
	}
}

// jobSpecPath is where a Job's spec is, cronJobSpecPath a CronJob's Job spec.
var jobSpecPath, cronJobSpecPath = field.NewPath("spec"), field.NewPath("spec", "jobTemplate", "spec")

// jobKind is the strategy of Jobs.
func jobKind() kind[*batch.Job] {
	return kind[*batch.Job]{
		prepareCreate: func(_ context.Context, j *batch.Job) {
			if !ptr.Deref(j.Spec.ManualSelector, false) {
				generateJobSelector(j)
			}
			j.Status, j.Generation = batch.JobStatus{}, 1
			if !utilfeature.DefaultFeatureGate.Enabled(features.JobManagedBy) {
				j.Spec.ManagedBy = nil
			}
			job.DropDisabledFields(&j.Spec, nil)
			pod.DropDisabledTemplateFields(&j.Spec.Template, nil)
		},
		validate: func(_ context.Context, j *batch.Job) field.ErrorList {
			return batchvalidation.ValidateJobCreate(j, jobValidationOptions(j, nil))
		},
		warnCreate: func(ctx context.Context, j *batch.Job) []string {
			return append(podNameWarnings(j.Name), job.WarningsForJobSpec(ctx, jobSpecPath, &j.Spec, nil)...)
		},
		prepareUpdate: func(_ context.Context, j, old *batch.Job) {
			j.Status = old.Status
			job.DropDisabledFields(&j.Spec, &old.Spec)
			pod.DropDisabledTemplateFields(&j.Spec.Template, &old.Spec.Template)
			if !apiequality.Semantic.DeepEqual(j.Spec, old.Spec) {
				j.Generation = old.Generation + 1
			}
		},
		validateUpdate: func(_ context.Context, j, old *batch.Job) field.ErrorList {
			return batchvalidation.ValidateJobUpdate(j, old, jobValidationOptions(j, old))
		},
		warnUpdate: func(ctx context.Context, j, old *batch.Job) []string {
			if j.Generation == old.Generation {
				return nil
			}
			return job.WarningsForJobSpec(ctx, jobSpecPath, &j.Spec, &old.Spec)
		},
		prepareStatus: func(_ context.Context, j, old *batch.Job) { j.Spec = old.Spec },
		validateStatus: func(_ context.Context, j, old *batch.Job) field.ErrorList {
			return batchvalidation.ValidateJobUpdateStatus(j, old, jobStatusOptions(j, old))
		},
		declarative: workloadWithJob[*batch.Job],
	}
}

// workloadWithJob gives declarative validation of Jobs and CronJobs the one option
// their types' tags name: whether Jobs may carry a workload's scheduling.
func workloadWithJob[T any](context.Context, T, T) rest.DeclarativeValidationConfig {
	gate := features.WorkloadWithJob
	return rest.DeclarativeValidationConfig{Options: map[string]bool{string(gate): utilfeature.DefaultFeatureGate.Enabled(gate)}}
}

// generateJobSelector gives a Job that does not choose its selector
// (spec.manualSelector) the labels that tie its Pods to it alone, the Job's name and
// uid, each under its legacy and its batch.kubernetes.io key, on its template, and a
// selector of the uid. Labels the client set itself stay: validation refuses a
// template the selector does not select.
func generateJobSelector(j *batch.Job) {
	uid, name := string(j.UID), j.Name
	generated := map[string]string{
		batch.LegacyJobNameLabel: name, batch.JobNameLabel: name,
		batch.LegacyControllerUidLabel: uid, batch.ControllerUidLabel: uid,
	}
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range generated {
		if _, set := j.Spec.Template.Labels[k]; !set {
			j.Spec.Template.Labels[k] = v
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, set := j.Spec.Selector.MatchLabels[batch.ControllerUidLabel]; !set {
		j.Spec.Selector.MatchLabels[batch.ControllerUidLabel] = uid
	}
}

// jobValidationOptions are the options of a Job's validation, old nil on create. A
// new Job's template must carry the batch.kubernetes.io labels; an update requires
// them only of a Job that had both, tolerates a selector with a label value that was
// already invalid, and lets a suspended Job change its template's scheduling
// directives (and, with their gates, its whole template's scheduling and
// resources: mutablePodTemplate).
func jobValidationOptions(j, old *batch.Job) batchvalidation.JobValidationOptions {
	if old == nil {
		return batchvalidation.JobValidationOptions{
			PodValidationOptions:  pod.GetValidationOptionsFromPodTemplate(&j.Spec.Template, nil),
			RequirePrefixedLabels: true,
		}
	}
	opts := batchvalidation.JobValidationOptions{PodValidationOptions: pod.GetValidationOptionsFromPodTemplate(&j.Spec.Template, &old.Spec.Template)}
	opts.AllowInvalidLabelValueInSelector = opts.AllowInvalidLabelValueInSelector || metav1validation.LabelSelectorHasInvalidLabelValue(old.Spec.Selector)
	opts.AllowMutableSchedulingDirectives = ptr.Deref(old.Spec.Suspend, false) && old.Status.StartTime == nil
	mutable := mutablePodTemplate(old)
	if utilfeature.DefaultFeatureGate.Enabled(features.MutablePodResourcesForSuspendedJobs) {
		opts.AllowMutablePodResources = mutable
	}
	if utilfeature.DefaultFeatureGate.Enabled(features.MutableSchedulingDirectivesForSuspendedJobs) {
		opts.AllowMutableSchedulingDirectives = mutable
	}
	_, hadName := old.Spec.Template.Labels[batch.JobNameLabel]
	_, hadUID := old.Spec.Template.Labels[batch.ControllerUidLabel]
	opts.RequirePrefixedLabels = hadName && hadUID
	return opts
}

// mutablePodTemplate reports whether a Job, as stored, may have its Pod template
// changed: it is suspended, has no active Pods, and either never started or says it
// is suspended (condition Suspended).
func mutablePodTemplate(old *batch.Job) bool {
	if !ptr.Deref(old.Spec.Suspend, false) || old.Status.Active != 0 {
		return false
	}
	return old.Status.StartTime == nil || batchvalidation.IsConditionTrue(old.Status.Conditions, batch.JobSuspended)
}

// jobStatusChanges says which parts of a Job's status an update changes, as the
// checks of jobStatusOptions key on them.
type jobStatusChanges struct {
	finished, complete, failed, failureTarget, successCriteriaMet bool
	completedIndexes, failedIndexes                               bool
	active, ready, terminating, uncountedTerminatedPods           bool
	startTime, completionTime                                     bool
}

func jobStatusChangesOf(j, old *batch.Job) jobStatusChanges {
	condition := func(j *batch.Job, c batch.JobConditionType) bool {
		return batchvalidation.IsConditionTrue(j.Status.Conditions, c)
	}
	s, was := &j.Status, &old.Status
	return jobStatusChanges{
		finished:                batchvalidation.IsJobFinished(j) != batchvalidation.IsJobFinished(old),
		complete:                batchvalidation.IsJobComplete(j) != batchvalidation.IsJobComplete(old),
		failed:                  batchvalidation.IsJobFailed(j) != batchvalidation.IsJobFailed(old),
		failureTarget:           condition(j, batch.JobFailureTarget) != condition(old, batch.JobFailureTarget),
		successCriteriaMet:      condition(j, batch.JobSuccessCriteriaMet) != condition(old, batch.JobSuccessCriteriaMet),
		completedIndexes:        s.CompletedIndexes != was.CompletedIndexes,
		failedIndexes:           !ptr.Equal(s.FailedIndexes, was.FailedIndexes),
		active:                  s.Active != was.Active,
		ready:                   !ptr.Equal(s.Ready, was.Ready),
		terminating:             !ptr.Equal(s.Terminating, was.Terminating),
		uncountedTerminatedPods: !apiequality.Semantic.DeepEqual(s.UncountedTerminatedPods, was.UncountedTerminatedPods),
		startTime:               !s.StartTime.Equal(was.StartTime),
		completionTime:          !s.CompletionTime.Equal(was.CompletionTime),
	}
}

// jobStatusOptions are the checks of an update of a Job's status. With Jobs that
// other controllers may manage (JobManagedBy), a status must move as the Job
// controller moves it (a finished Job stays finished, counters do not go back, ...);
// each check but those of counters and terminal conditions applies only when the
// fields it reads change, so that an update of other fields may go on, and the
// controller has time to follow a change of the spec. Without the gate, none.
func jobStatusOptions(j, old *batch.Job) batchvalidation.JobStatusValidationOptions {
	if !utilfeature.DefaultFeatureGate.Enabled(features.JobManagedBy) {
		return batchvalidation.JobStatusValidationOptions{}
	}
	c := jobStatusChangesOf(j, old)
	indexed := ptr.Deref(j.Spec.CompletionMode, batch.NonIndexedCompletion) == batch.IndexedCompletion
	// An Indexed Job whose completions follow its parallelism may scale down.
	scalable := indexed && ptr.Equal(j.Spec.Completions, j.Spec.Parallelism)
	suspendedWithNoCompletions := ptr.Deref(j.Spec.Suspend, false) && ptr.Equal(j.Spec.Completions, ptr.To[int32](0))
	// A Job being resumed: its Suspended condition goes from True to False.
	resuming := batchvalidation.IsConditionTrue(old.Status.Conditions, batch.JobSuspended) &&
		batchvalidation.IsConditionFalse(j.Status.Conditions, batch.JobSuspended)
	return batchvalidation.JobStatusValidationOptions{
		RejectDecreasingSucceededCounter:             !scalable,
		RejectDecreasingFailedCounter:                true,
		RejectDisablingTerminalCondition:             true,
		RejectMutatingCompletionTime:                 true,
		RejectInvalidCompletedIndexes:                c.completedIndexes,
		RejectCompletedIndexesForNonIndexedJob:       c.completedIndexes,
		RejectInvalidFailedIndexes:                   c.failedIndexes,
		RejectFailedIndexesForNoBackoffLimitPerIndex: c.failedIndexes,
		RejectFailedIndexesOverlappingCompleted:      c.failedIndexes || c.completedIndexes,
		RejectFailedJobWithoutFailureTarget:          c.failed || c.failedIndexes,
		RejectCompleteJobWithoutSuccessCriteriaMet:   c.complete || c.successCriteriaMet,
		RejectFinishedJobWithActivePods:              c.finished || c.active,
		RejectFinishedJobWithoutStartTime:            (c.finished || c.startTime) && !suspendedWithNoCompletions,
		RejectFinishedJobWithUncountedTerminatedPods: c.finished || c.uncountedTerminatedPods,
		RejectStartTimeUpdateForUnsuspendedJob:       c.startTime && !resuming,
		RejectCompletionTimeBeforeStartTime:          c.startTime || c.completionTime,
		RejectNotCompleteJobWithCompletionTime:       c.complete || c.completionTime,
		RejectCompleteJobWithoutCompletionTime:       c.complete || c.completionTime,
		RejectCompleteJobWithFailedCondition:         c.complete || c.failed,
		RejectCompleteJobWithFailureTargetCondition:  c.complete || c.failureTarget,
		RejectMoreReadyThanActivePods:                c.ready || c.active,
		RejectFinishedJobWithTerminatingPods:         c.finished || c.terminating,
	}
}

// cronJobKind is the strategy of CronJobs.
func cronJobKind() kind[*batch.CronJob] {
	return kind[*batch.CronJob]{
		prepareCreate: func(_ context.Context, c *batch.CronJob) {
			c.Status, c.Generation = batch.CronJobStatus{}, 1
			job.DropDisabledFields(&c.Spec.JobTemplate.Spec, nil)
			pod.DropDisabledTemplateFields(&c.Spec.JobTemplate.Spec.Template, nil)
		},
		validate: func(_ context.Context, c *batch.CronJob) field.ErrorList {
			return batchvalidation.ValidateCronJobCreate(c, pod.GetValidationOptionsFromPodTemplate(&c.Spec.JobTemplate.Spec.Template, nil))
		},
		warnCreate: func(ctx context.Context, c *batch.CronJob) []string {
			return append(podNameWarnings(c.Name), job.WarningsForJobSpec(ctx, cronJobSpecPath, &c.Spec.JobTemplate.Spec, nil)...)
		},
		prepareUpdate: func(_ context.Context, c, old *batch.CronJob) {
			c.Status = old.Status
			job.DropDisabledFields(&c.Spec.JobTemplate.Spec, &old.Spec.JobTemplate.Spec)
			pod.DropDisabledTemplateFields(&c.Spec.JobTemplate.Spec.Template, &old.Spec.JobTemplate.Spec.Template)
			if !apiequality.Semantic.DeepEqual(c.Spec, old.Spec) {
				c.Generation = old.Generation + 1
			}
		},
		validateUpdate: func(_ context.Context, c, old *batch.CronJob) field.ErrorList {
			opts := pod.GetValidationOptionsFromPodTemplate(&c.Spec.JobTemplate.Spec.Template, &old.Spec.JobTemplate.Spec.Template)
			return batchvalidation.ValidateCronJobUpdate(c, old, opts)
		},
		warnUpdate:    cronJobUpdateWarnings,
		prepareStatus: func(_ context.Context, c, old *batch.CronJob) { c.Spec = old.Spec },
		// kube validates nothing of a CronJob's status but its metadata.
		declarative: workloadWithJob[*batch.CronJob],
	}
}

// cronJobUpdateWarnings warns of the Job spec of a CronJob whose spec changed, and of
// a schedule that names a time zone (a schedule kept from before kube refused them).
// The schedule's path reads spec.spec.schedule, as in kube-apiserver's warning.
func cronJobUpdateWarnings(ctx context.Context, c, old *batch.CronJob) []string {
	var warnings []string
	if c.Generation != old.Generation {
		warnings = job.WarningsForJobSpec(ctx, cronJobSpecPath, &c.Spec.JobTemplate.Spec, &old.Spec.JobTemplate.Spec)
	}
	if strings.Contains(c.Spec.Schedule, "TZ") {
		schedule := field.NewPath("spec", "spec", "schedule")
		warnings = append(warnings, fmt.Sprintf("cannot use TZ or CRON_TZ in %s, use timeZone instead, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", schedule))
	}
	return warnings
}
