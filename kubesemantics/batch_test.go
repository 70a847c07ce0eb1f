package kubesemantics

import (
	"maps"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/apis/batch"
	batchvalidation "k8s.io/kubernetes/pkg/apis/batch/validation"
	"k8s.io/utils/ptr"
)

const jobManifest = `
apiVersion: batch/v1
kind: Job
metadata: {name: work, namespace: default, uid: 0d9b1a3e-55a4-4f61-8d4b-7d4b0a0e2f11}
spec:
  template:
    metadata: {labels: {app: batch}}
    spec:
      restartPolicy: Never
      containers: [{name: c, image: "busybox:1.36"}]
status: {succeeded: 4}
`

// Jobs: batch/v1's defaults, the Job's labels the template's as written, a selector
// generated from the uid with its labels on the template, generation 1 and a reset
// status; kube's errors.
func TestJobs(t *testing.T) {
	r := catalogResource(t, semanticsAt(t, "1.37"), "batch", "jobs")
	const uid = "0d9b1a3e-55a4-4f61-8d4b-7d4b0a0e2f11"
	j := mustCreate(t, r, "v1", jobManifest)
	wantField(t, j, "metadata.generation", 1)
	wantField(t, j, "metadata.labels", map[string]any{"app": "batch"})
	wantField(t, j, "status", map[string]any{})
	wantField(t, j, "spec.selector", map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": uid}})
	wantField(t, j, "spec.template.metadata.labels", map[string]any{
		"app": "batch", "controller-uid": uid, "batch.kubernetes.io/controller-uid": uid,
		"job-name": "work", "batch.kubernetes.io/job-name": "work",
	})
	for path, want := range map[string]any{
		"completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": false,
		"podReplacementPolicy": "TerminatingOrFailed", "manualSelector": false,
	} {
		wantField(t, j, "spec."+path, want)
	}
	wantField(t, j, "spec.template.spec.containers", []any{map[string]any{
		"name": "c", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent", "resources": map[string]any{},
		"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
	}})

	for _, tc := range []struct {
		name  string
		edit  func(map[string]any)
		wants []string
	}{
		{"restart policy Always", func(o map[string]any) { set(o, "spec.template.spec.restartPolicy", "Always") },
			[]string{"spec.template.spec.restartPolicy: Required value"}},
		{"negative parallelism", func(o map[string]any) { set(o, "spec.parallelism", int64(-1)) },
			[]string{"spec.parallelism: Invalid value"}},
		{"manual selector that misses the template", func(o map[string]any) {
			set(o, "spec.manualSelector", true)
			set(o, "spec.selector", map[string]any{"matchLabels": map[string]any{"app": "other"}})
		}, []string{"spec.template.metadata.labels: Invalid value"}},
		{"manual selector missing", func(o map[string]any) { set(o, "spec.manualSelector", true) },
			[]string{"spec.selector: Required value", "spec.template.metadata.labels: Invalid value"}},
		{"a template label of the generated selector set otherwise", func(o map[string]any) {
			set(o, "spec.template.metadata.labels", map[string]any{"batch.kubernetes.io/controller-uid": "x"})
		}, []string{"spec.template.metadata.labels: Invalid value", "spec.template.metadata.labels[batch.kubernetes.io/controller-uid]: Invalid value"}},
	} {
		obj := object(t, jobManifest)
		tc.edit(obj.Object)
		manifest, _ := obj.MarshalJSON()
		_, errs := create(t, r, "v1", string(manifest))
		wantErrors(t, tc.name, errs, tc.wants...)
	}
}

// Updates of a Job: kube's immutable fields, the elastic completions of an Indexed
// Job, the scheduling directives of a suspended Job that never started; the status
// under JobManagedBy's transition rules.
func TestJobUpdates(t *testing.T) {
	r := catalogResource(t, semanticsAt(t, "1.37"), "batch", "jobs")
	j := mustCreate(t, r, "v1", jobManifest)
	limited, errs := update(t, r, "v1", "", j, func(o map[string]any) { set(o, "spec.backoffLimit", int64(2)) })
	wantErrors(t, "backoffLimit", errs)
	wantField(t, limited, "metadata.generation", 2)
	_, errs = update(t, r, "v1", "", j, func(o map[string]any) { set(o, "spec.template.spec.nodeSelector", map[string]any{"zone": "a"}) })
	wantErrors(t, "the node selector of a running Job", errs, "spec.template: Invalid value")
	_, errs = update(t, r, "v1", "", j, func(o map[string]any) { set(o, "spec.completions", int64(3)) })
	wantErrors(t, "completions of a NonIndexed Job", errs, "spec.completions: Invalid value")
	_, errs = update(t, r, "v1", "", j, func(o map[string]any) { set(o, "spec.selector.matchLabels.extra", "x") })
	wantErrors(t, "a new selector", errs, "spec.selector: Invalid value", "spec.template.metadata.labels: Invalid value")

	obj := object(t, jobManifest)
	set(obj.Object, "spec.suspend", true)
	set(obj.Object, "spec.completionMode", "Indexed")
	set(obj.Object, "spec.completions", int64(2))
	set(obj.Object, "spec.parallelism", int64(2))
	manifest, _ := obj.MarshalJSON()
	suspended := mustCreate(t, r, "v1", string(manifest))
	_, errs = update(t, r, "v1", "", suspended, func(o map[string]any) {
		set(o, "spec.template.spec.nodeSelector", map[string]any{"zone": "a"})
		set(o, "spec.template.spec.tolerations", []any{map[string]any{"key": "gpu", "operator": "Exists"}})
	})
	wantErrors(t, "scheduling directives of a suspended Job", errs)
	_, errs = update(t, r, "v1", "", suspended, func(o map[string]any) {
		set(o, "spec.template.spec.affinity", map[string]any{"podAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{}}})
	})
	wantErrors(t, "pod affinity of a suspended Job", errs, "spec.template.spec: Invalid value")
	_, errs = update(t, r, "v1", "", suspended, func(o map[string]any) { set(o, "spec.completions", int64(4)); set(o, "spec.parallelism", int64(4)) })
	wantErrors(t, "scaling an Indexed Job", errs)
	_, errs = update(t, r, "v1", "", suspended, func(o map[string]any) { set(o, "spec.completions", int64(5)) })
	wantErrors(t, "completions alone of an Indexed Job", errs, "spec.completions: Invalid value")

	counted, errs := update(t, r, "v1", "status", j, func(o map[string]any) {
		set(o, "status.succeeded", int64(2))
		set(o, "status.startTime", "2026-01-02T03:04:05Z")
		set(o, "spec.backoffLimit", int64(1))
	})
	wantErrors(t, "counting successes", errs)
	wantField(t, counted, "spec.backoffLimit", 6)
	_, errs = update(t, r, "v1", "status", counted, func(o map[string]any) { set(o, "status.succeeded", int64(1)) })
	wantErrors(t, "fewer successes", errs, "status.succeeded: Invalid value")
	_, errs = update(t, r, "v1", "status", counted, func(o map[string]any) { set(o, "status.startTime", "2026-01-02T03:04:06Z") })
	wantErrors(t, "a new start time of an unsuspended Job", errs, "status.startTime: Invalid value")
}

// generateJobSelector adds what is missing, and keeps what the client set.
func TestGenerateJobSelector(t *testing.T) {
	j := &batch.Job{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u"}}
	generateJobSelector(j)
	want := map[string]string{"job-name": "n", "batch.kubernetes.io/job-name": "n", "controller-uid": "u", "batch.kubernetes.io/controller-uid": "u"}
	if !maps.Equal(j.Spec.Template.Labels, want) || !maps.Equal(j.Spec.Selector.MatchLabels, map[string]string{"batch.kubernetes.io/controller-uid": "u"}) {
		t.Errorf("generated: labels %v, selector %v", j.Spec.Template.Labels, j.Spec.Selector)
	}
	j = &batch.Job{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "u"}}
	j.Spec.Template.Labels = map[string]string{"job-name": "mine"}
	j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "v"}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpExists}}}
	generateJobSelector(j)
	if j.Spec.Template.Labels["job-name"] != "mine" || j.Spec.Selector.MatchLabels["batch.kubernetes.io/controller-uid"] != "v" || len(j.Spec.Selector.MatchExpressions) != 1 {
		t.Errorf("kept: labels %v, selector %v", j.Spec.Template.Labels, j.Spec.Selector)
	}
}

// The options of a Job's validation: prefixed labels on create and where the stored
// Job has both; a selector's invalid label value kept; the template of a suspended
// Job that never started (or says it is suspended) and has no active Pods mutable,
// with the gates of 1.36; before them (1.34), only the scheduling directives of one
// that never started.
func TestJobValidationOptions(t *testing.T) {
	suspended := func(started, condition bool, active int32) *batch.Job {
		j := &batch.Job{Spec: batch.JobSpec{Suspend: ptr.To(true)}, Status: batch.JobStatus{Active: active}}
		if started {
			j.Status.StartTime = &metav1.Time{Time: time.Unix(1, 0)}
		}
		if condition {
			j.Status.Conditions = []batch.JobCondition{{Type: batch.JobSuspended, Status: "True"}}
		}
		return j
	}
	for _, tc := range []struct {
		release          string
		old              *batch.Job
		scheduling, pods bool
	}{
		{"1.37", suspended(false, false, 0), true, true},
		{"1.37", suspended(true, true, 0), true, true},
		{"1.37", suspended(true, false, 0), false, false},
		{"1.37", suspended(false, false, 1), false, false},
		{"1.37", &batch.Job{}, false, false},
		{"1.34", suspended(false, false, 1), true, false},
		{"1.34", suspended(true, true, 0), false, false},
	} {
		semanticsAt(t, tc.release).gates.Do(func() {
			j := &batch.Job{}
			if o := jobValidationOptions(j, nil); !o.RequirePrefixedLabels || o.AllowMutableSchedulingDirectives || o.AllowMutablePodResources {
				t.Errorf("create options %+v", o)
			}
			o := jobValidationOptions(j, tc.old)
			if o.AllowMutableSchedulingDirectives != tc.scheduling || o.AllowMutablePodResources != tc.pods || o.RequirePrefixedLabels {
				t.Errorf("%s: update of %+v: options %+v", tc.release, tc.old.Status, o)
			}
		})
	}
	old := &batch.Job{}
	old.Spec.Template.Labels = map[string]string{batch.JobNameLabel: "n", batch.ControllerUidLabel: "u"}
	old.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: metav1.LabelSelectorOpIn, Values: []string{"not valid!"}}}}
	if o := jobValidationOptions(&batch.Job{}, old); !o.RequirePrefixedLabels || !o.AllowInvalidLabelValueInSelector {
		t.Errorf("update of a Job with prefixed labels and an invalid selector value: %+v", o)
	}
}

// The options of a Job's status update: the checks of counters and terminal
// conditions always (but the successes of an Indexed Job that scales), the others
// when what they read changes.
func TestJobStatusOptions(t *testing.T) {
	semanticsAt(t, "1.37").gates.Do(func() {
		old := &batch.Job{Status: batch.JobStatus{StartTime: &metav1.Time{Time: time.Unix(1, 0)}}}
		same := jobStatusOptions(old.DeepCopy(), old)
		want := batchvalidation.JobStatusValidationOptions{
			RejectDecreasingSucceededCounter: true, RejectDecreasingFailedCounter: true,
			RejectDisablingTerminalCondition: true, RejectMutatingCompletionTime: true,
		}
		if same != want {
			t.Errorf("an unchanged status: %+v", same)
		}
		j := old.DeepCopy()
		j.Status.CompletedIndexes, j.Status.Active, j.Status.StartTime = "1", 2, &metav1.Time{Time: time.Unix(2, 0)}
		o := jobStatusOptions(j, old)
		if !o.RejectInvalidCompletedIndexes || !o.RejectCompletedIndexesForNonIndexedJob || !o.RejectFailedIndexesOverlappingCompleted ||
			o.RejectInvalidFailedIndexes || !o.RejectFinishedJobWithActivePods || !o.RejectMoreReadyThanActivePods ||
			!o.RejectStartTimeUpdateForUnsuspendedJob || !o.RejectCompletionTimeBeforeStartTime || !o.RejectFinishedJobWithoutStartTime {
			t.Errorf("changed indexes, active and start time: %+v", o)
		}
		j.Spec = batch.JobSpec{CompletionMode: ptr.To(batch.IndexedCompletion), Completions: ptr.To[int32](3), Parallelism: ptr.To[int32](3), Suspend: ptr.To(true)}
		old.Status.Conditions = []batch.JobCondition{{Type: batch.JobSuspended, Status: "True"}}
		j.Status.Conditions = []batch.JobCondition{{Type: batch.JobSuspended, Status: "False"}}
		if o := jobStatusOptions(j, old); o.RejectDecreasingSucceededCounter || o.RejectStartTimeUpdateForUnsuspendedJob {
			t.Errorf("a resumed Indexed Job that scales: %+v", o)
		}
		j.Spec.Completions = ptr.To[int32](0)
		if o := jobStatusOptions(j, old); o.RejectFinishedJobWithoutStartTime {
			t.Errorf("a suspended Job of no completions: %+v", o)
		}
	})
}

const cronJobManifest = `
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: default}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: busybox}]
status: {lastScheduleTime: "2026-01-01T03:00:00Z"}
`

// CronJobs: batch/v1's defaults, generation 1 and a reset status; kube's errors, in
// batch/v1 and batch/v1beta1; the generation of a spec change; a status update that
// changes nothing else.
func TestCronJobs(t *testing.T) {
	r := catalogResource(t, semanticsAt(t, "1.37"), "batch", "cronjobs")
	c := mustCreate(t, r, "v1", cronJobManifest)
	wantField(t, c, "metadata.generation", 1)
	wantField(t, c, "status", map[string]any{})
	for path, want := range map[string]any{
		"concurrencyPolicy": "Allow", "suspend": false, "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
		// A Job's own defaults wait for the Job; its Pod template's do not.
		"jobTemplate.spec.backoffLimit": nil, "jobTemplate.spec.template.spec.dnsPolicy": "ClusterFirst",
	} {
		wantField(t, c, "spec."+path, want)
	}
	for _, tc := range []struct {
		name, path string
		value      any
		want       []string
	}{
		{"bad schedule", "spec.schedule", "every day", []string{"spec.schedule: Invalid value"}},
		{"time zone in the schedule", "spec.schedule", "TZ=UTC 0 3 * * *", []string{"spec.schedule: Invalid value"}},
		{"unknown time zone", "spec.timeZone", "Mars/Olympus", []string{"spec.timeZone: Invalid value"}},
		{"unknown concurrency policy", "spec.concurrencyPolicy", "Sometimes", []string{"spec.concurrencyPolicy: Unsupported value"}},
		{"restart policy Always", "spec.jobTemplate.spec.template.spec.restartPolicy", "Always", []string{"spec.jobTemplate.spec.template.spec.restartPolicy: Required value"}},
	} {
		for _, version := range []string{"v1", "v1beta1"} {
			obj := object(t, cronJobManifest)
			obj.SetAPIVersion("batch/" + version)
			set(obj.Object, tc.path, tc.value)
			manifest, _ := obj.MarshalJSON()
			_, errs := create(t, r, version, string(manifest))
			wantErrors(t, version+" "+tc.name, errs, tc.want...)
		}
	}
	suspended, errs := update(t, r, "v1", "", c, func(o map[string]any) { set(o, "spec.suspend", true) })
	wantErrors(t, "suspending", errs)
	wantField(t, suspended, "metadata.generation", 2)
	_, errs = update(t, r, "v1", "", c, func(o map[string]any) { set(o, "spec.schedule", "every day") })
	wantErrors(t, "a bad schedule", errs, "spec.schedule: Invalid value")
	status, errs := update(t, r, "v1", "status", c, func(o map[string]any) {
		set(o, "status.lastScheduleTime", "2026-01-02T03:00:00Z")
		set(o, "spec.schedule", "every day")
	})
	wantErrors(t, "a status update", errs)
	wantField(t, status, "status.lastScheduleTime", "2026-01-02T03:00:00Z")
	wantField(t, status, "spec.schedule", "0 3 * * *")
}

// A CronJob's update warns of a schedule that names a time zone, at kube's path.
func TestCronJobUpdateWarnings(t *testing.T) {
	c := &batch.CronJob{Spec: batch.CronJobSpec{Schedule: "CRON_TZ=UTC 0 3 * * *"}}
	w := cronJobUpdateWarnings(t.Context(), c, c)
	if len(w) != 1 || !strings.HasPrefix(w[0], "cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead") {
		t.Errorf("warnings %q", w)
	}
	c.Spec.Schedule = "0 3 * * *"
	if w := cronJobUpdateWarnings(t.Context(), c, c); len(w) != 0 {
		t.Errorf("warnings of a plain schedule: %q", w)
	}
}

// Declarative validation of Jobs and CronJobs gets WorkloadWithJob, off at 1.37.
func TestWorkloadWithJobOption(t *testing.T) {
	semanticsAt(t, "1.37").gates.Do(func() {
		cfg := workloadWithJob[*batch.Job](t.Context(), nil, nil)
		if v, ok := cfg.Options["WorkloadWithJob"]; !ok || v {
			t.Errorf("options %v", cfg.Options)
		}
	})
}
