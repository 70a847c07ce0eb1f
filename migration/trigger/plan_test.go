package trigger

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/concordproject/concord/migration/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// world is what plan sees and acts on: one resource's state and migrations.
type world struct {
	now   time.Time
	state *api.StorageStateStatus
	migs  []migrationSummary
}

// latest returns the trigger's newest migration.
func (w *world) latest() *migrationSummary {
	var l *migrationSummary
	for i := range w.migs {
		if m := &w.migs[i]; m.Triggered && (l == nil || m.Sequence > l.Sequence) {
			l = m
		}
	}
	return l
}

func (w *world) end(phase, reason string) {
	l := w.latest()
	l.Phase, l.Finished = phase, w.now
	l.Aborted = reason == api.ReasonStorageVersionsDisagree || reason == api.ReasonStorageVersionChanged
}

// step is one moment of a story: something happens (do), then the trigger looks at
// the resource as obs shows it.
type step struct {
	what string
	do   func(*world)
	obs  observation
	// want: the state after the step, and what the trigger did.
	persisted []string
	current   string
	launch    bool
	aborts    []string // reasons
	requeue   time.Duration
}

func agreed(h, rv string) observation {
	return observation{Agreed: true, Current: h, Reported: []string{h}, ResourceVersion: rv}
}

func mixed(rv string, hs ...string) observation {
	return observation{Reported: hs, ResourceVersion: rv}
}

func succeed(w *world)     { w.end(api.ConditionSucceeded, api.ReasonMigrationCompleted) }
func failObjects(w *world) { w.end(api.ConditionFailed, api.ReasonObjectsFailed) }
func after(d time.Duration) func(*world) {
	return func(w *world) { w.now = w.now.Add(d) }
}

var testCfg = lifecycleConfig{Heartbeat: time.Minute, Staleness: 10 * time.Minute, RetryFailed: 10 * time.Minute}

// The StorageState life-cycle of the KEP, with Concord's HA rules, over sequences of
// StorageVersion (or discovery) observations.
func TestLifecycle(t *testing.T) {
	const A, B = "hashA", "hashB"
	tests := []struct {
		name  string
		steps []step
	}{{
		name: "new resource from discovery",
		steps: []step{
			{what: "first sight", obs: agreed(A, ""), persisted: []string{api.Unknown}, current: A, launch: true},
			{what: "still running", do: after(time.Second), obs: agreed(A, ""), persisted: []string{api.Unknown}, current: A},
			{what: "migrated", do: succeed, obs: agreed(A, ""), persisted: []string{A}, current: A},
			{what: "heartbeat only", do: after(2 * time.Minute), obs: agreed(A, ""), persisted: []string{A}, current: A},
		},
	}, {
		name: "upgrade then downgrade (the KEP's CronJob story)",
		steps: []step{
			{what: "1.14 first sight", obs: agreed(A, ""), persisted: []string{api.Unknown}, current: A, launch: true},
			{what: "1.14 migrated", do: succeed, obs: agreed(A, ""), persisted: []string{A}, current: A},
			{what: "upgrade to 1.15", obs: agreed(B, ""), persisted: []string{A, B}, current: B, launch: true},
			{what: "1.15 migrated", do: succeed, obs: agreed(B, ""), persisted: []string{B}, current: B},
			{what: "downgrade to 1.14", obs: agreed(A, ""), persisted: []string{B, A}, current: A, launch: true},
			{what: "1.14 migrated again", do: succeed, obs: agreed(A, ""), persisted: []string{A}, current: A},
		},
	}, {
		name: "rolling upgrade: nothing while mixed, exactly one migration after agreement",
		steps: []step{
			{what: "start", obs: agreed(A, "1"), persisted: []string{api.Unknown}, current: A, launch: true},
			{what: "migrated", do: succeed, obs: agreed(A, "1"), persisted: []string{A}, current: A},
			{what: "one server upgraded", obs: mixed("2", A, B), persisted: []string{A, B}, current: api.Unknown},
			{what: "two servers upgraded", obs: mixed("3", B, A), persisted: []string{A, B}, current: api.Unknown},
			{what: "all upgraded", obs: agreed(B, "4"), persisted: []string{A, B}, current: B, launch: true},
			{what: "seen again", obs: agreed(B, "4"), persisted: []string{A, B}, current: B},
			{what: "migrated", do: succeed, obs: agreed(B, "4"), persisted: []string{B}, current: B},
		},
	}, {
		name: "disagreement aborts the running migration",
		steps: []step{
			{what: "start", obs: agreed(B, "4"), persisted: []string{api.Unknown}, current: B, launch: true},
			{what: "a server rolls back", obs: mixed("5", B, A), persisted: []string{api.Unknown, B, A}, current: api.Unknown, aborts: []string{api.ReasonStorageVersionsDisagree}},
			{what: "the abort is seen", do: func(w *world) { w.end(api.ConditionFailed, api.ReasonStorageVersionsDisagree) }, obs: mixed("5", B, A), persisted: []string{api.Unknown, B, A}, current: api.Unknown},
			{what: "agreement again", obs: agreed(B, "6"), persisted: []string{api.Unknown, B, A}, current: B, launch: true},
			{what: "migrated", do: succeed, obs: agreed(B, "6"), persisted: []string{B}, current: B},
		},
	}, {
		name: "StorageVersion changed during the migration: restarted",
		steps: []step{
			{what: "start", obs: agreed(B, "4"), persisted: []string{api.Unknown}, current: B, launch: true},
			{what: "a server joins, same version", obs: agreed(B, "5"), persisted: []string{api.Unknown}, current: B, launch: true, aborts: []string{api.ReasonStorageVersionChanged}},
			{what: "migrated", do: succeed, obs: agreed(B, "5"), persisted: []string{B}, current: B},
		},
	}, {
		name: "success that ends after a StorageVersion change does not count",
		steps: []step{
			{what: "start", obs: agreed(B, "4"), persisted: []string{api.Unknown}, current: B, launch: true},
			{what: "succeeds, but the object moved", do: succeed, obs: agreed(B, "7"), persisted: []string{api.Unknown}, current: B, launch: true},
			{what: "migrated", do: succeed, obs: agreed(B, "7"), persisted: []string{B}, current: B},
		},
	}, {
		name: "stale heartbeat from discovery: reset and migrate again",
		steps: []step{
			{what: "start", obs: agreed(A, ""), persisted: []string{api.Unknown}, current: A, launch: true},
			{what: "migrated", do: succeed, obs: agreed(A, ""), persisted: []string{A}, current: A},
			{what: "trigger down 11m", do: after(11 * time.Minute), obs: agreed(A, ""), persisted: []string{api.Unknown}, current: A, launch: true},
			{what: "migrated", do: succeed, obs: agreed(A, ""), persisted: []string{A}, current: A},
		},
	}, {
		name: "stale heartbeat, StorageVersion unchanged: the earlier migration still proves it",
		steps: []step{
			{what: "start", obs: agreed(A, "1"), persisted: []string{api.Unknown}, current: A, launch: true},
			{what: "migrated", do: succeed, obs: agreed(A, "1"), persisted: []string{A}, current: A},
			{what: "trigger down 11m", do: after(11 * time.Minute), obs: agreed(A, "1"), persisted: []string{A}, current: A},
		},
	}, {
		name: "short outage: a hash change is still seen",
		steps: []step{
			{what: "start", obs: agreed(A, ""), persisted: []string{api.Unknown}, current: A, launch: true},
			{what: "migrated", do: succeed, obs: agreed(A, ""), persisted: []string{A}, current: A},
			{what: "down 5m, upgraded meanwhile", do: after(5 * time.Minute), obs: agreed(B, ""), persisted: []string{A, B}, current: B, launch: true},
		},
	}, {
		name: "failed objects: retried after a delay that doubles",
		steps: []step{
			{what: "start", obs: agreed(A, ""), persisted: []string{api.Unknown}, current: A, launch: true},
			{what: "objects failed", do: failObjects, obs: agreed(A, ""), persisted: []string{api.Unknown}, current: A, requeue: 10 * time.Minute},
			{what: "4m later", do: after(4 * time.Minute), obs: agreed(A, ""), persisted: []string{api.Unknown}, current: A, requeue: 6 * time.Minute},
			{what: "10m later", do: after(6 * time.Minute), obs: agreed(A, ""), persisted: []string{api.Unknown}, current: A, launch: true},
			{what: "failed again", do: failObjects, obs: agreed(A, ""), persisted: []string{api.Unknown}, current: A, requeue: 20 * time.Minute},
		},
	}, {
		name: "other migrations are left alone, except while servers disagree",
		steps: []step{
			{what: "start", obs: agreed(A, "1"), persisted: []string{api.Unknown}, current: A, launch: true},
			{what: "migrated", do: succeed, obs: agreed(A, "1"), persisted: []string{A}, current: A},
			{what: "someone starts one", do: func(w *world) {
				w.migs = append(w.migs, migrationSummary{Name: "mine", Phase: api.ConditionRunning})
			}, obs: agreed(A, "1"), persisted: []string{A}, current: A},
			{what: "servers disagree", obs: mixed("2", A, B), persisted: []string{A, B}, current: api.Unknown, aborts: []string{api.ReasonStorageVersionsDisagree}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &world{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			for i, s := range tt.steps {
				if s.do != nil {
					s.do(w)
				}
				in := lifecycleInput{Now: w.now, State: w.state, Observed: s.obs, Latest: w.latest()}
				for _, m := range w.migs {
					if !m.terminal() {
						in.Active = append(in.Active, m)
					}
				}
				in.ConsecutiveFailures = consecutiveFailures(w.migs, s.obs.Current)
				out := plan(in, testCfg)
				where := fmt.Sprintf("step %d (%s)", i, s.what)
				if !slices.Equal(out.Status.PersistedStorageVersionHashes, s.persisted) || out.Status.CurrentStorageVersionHash != s.current {
					t.Fatalf("%s: persisted %v current %q, want %v %q", where, out.Status.PersistedStorageVersionHashes,
						out.Status.CurrentStorageVersionHash, s.persisted, s.current)
				}
				if out.Launch != s.launch {
					t.Fatalf("%s: launch = %v, want %v", where, out.Launch, s.launch)
				}
				var reasons []string
				for _, a := range out.Abort {
					reasons = append(reasons, a.Reason)
					for j := range w.migs {
						if w.migs[j].Name == a.Name {
							w.migs[j].Phase, w.migs[j].Aborted, w.migs[j].Finished = api.ConditionFailed, true, w.now
						}
					}
				}
				if !slices.Equal(reasons, s.aborts) {
					t.Fatalf("%s: aborted with %v, want %v", where, reasons, s.aborts)
				}
				if out.RequeueAfter != s.requeue {
					t.Fatalf("%s: requeue after %v, want %v", where, out.RequeueAfter, s.requeue)
				}
				if out.WriteStatus != (w.state == nil || !slices.Equal(w.state.PersistedStorageVersionHashes, s.persisted) ||
					w.state.CurrentStorageVersionHash != s.current || w.now.Sub(w.state.LastHeartbeatTime.Time) >= testCfg.Heartbeat) {
					t.Fatalf("%s: WriteStatus = %v with state %+v", where, out.WriteStatus, w.state)
				}
				if out.WriteStatus && !out.Status.LastHeartbeatTime.Time.Equal(w.now) {
					t.Fatalf("%s: heartbeat %v, want %v", where, out.Status.LastHeartbeatTime, w.now)
				}
				if out.Launch {
					seq := 1
					if l := w.latest(); l != nil {
						seq = l.Sequence + 1
					}
					w.migs = append(w.migs, migrationSummary{Name: migrationName("widgets.example.com", seq), Sequence: seq, Triggered: true,
						Hash: s.obs.Current, StorageVersionRV: s.obs.ResourceVersion, Phase: "Pending"})
				}
				st := out.Status
				w.state = &st
			}
		})
	}
}

func TestMigrationNames(t *testing.T) {
	long := ""
	for len(long) < 260 {
		long += "abcdefghij."
	}
	for _, tc := range []struct {
		state string
		n     int
	}{{"widgets.example.com", 1}, {"configmaps", 12}, {long, 3}} {
		name := migrationName(tc.state, tc.n)
		if len(name) > 253 {
			t.Errorf("migrationName(%q, %d) is %d long", tc.state, tc.n, len(name))
		}
		if got := sequenceOf(name); got != tc.n {
			t.Errorf("sequenceOf(%q) = %d, want %d", name, got, tc.n)
		}
	}
	if got := sequenceOf("widgets.example.com-abc"); got != 0 {
		t.Errorf("sequenceOf of a name without a number = %d", got)
	}
}

func TestSummarize(t *testing.T) {
	done := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	m := &api.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com-7", Annotations: map[string]string{
		api.AnnotationStorageVersionHash: "h", api.AnnotationStorageVersionResourceVersion: "42"}}}
	m.Status.Conditions = []metav1.Condition{
		{Type: api.ConditionRunning, Status: metav1.ConditionFalse, Reason: api.ReasonStorageVersionsDisagree},
		{Type: api.ConditionFailed, Status: metav1.ConditionTrue, Reason: api.ReasonStorageVersionsDisagree, LastTransitionTime: done},
	}
	got := summarize(m)
	want := migrationSummary{Name: m.Name, Sequence: 7, Triggered: true, Hash: "h", StorageVersionRV: "42", Phase: api.ConditionFailed, Aborted: true, Finished: done.Time}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
	user := summarize(&api.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "by-hand-3"}})
	if user.Triggered || user.Sequence != 0 || user.Phase != "Pending" {
		t.Errorf("a migration without the trigger's annotations: %+v", user)
	}
}
