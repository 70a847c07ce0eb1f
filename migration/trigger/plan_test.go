package trigger

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	migrationapi "github.com/concordproject/concord/migration/api"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// world is what plan sees and acts on: one resource's state and migrations.
type world struct {
	now   time.Time
	state *migrationapi.StorageStateStatus
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

var testCfg = lifecycleConfig{Heartbeat: time.Minute, Staleness: 10 * time.Minute, RetryFailed: 10 * time.Minute}

// TestLifecycle runs the stories of testdata/lifecycle: the StorageState life-cycle of
// the KEP, with Concord's HA rules, over sequences of StorageVersion (or discovery)
// observations. Each file is one story, told with these commands:
//
//	observe agreed=<hash> [rv=<StorageVersion resourceVersion>]
//	observe reported=(<hash>, <hash>...) rv=<rv>    servers disagree
//	observe agreed=<hash> rv=<rv> carried           every revision of the StorageVersion
//	                                                object since the latest migration's
//	                                                agreed on <hash> (guard.Carried)
//	end phase=(Succeeded|Failed) [reason=<reason>]  the latest migration ends
//	after <duration>                                time passes
//	create name=<name>                              someone else starts a migration
//
//	create name=<name> [seen-rv=<rv>] [seen-hash=<hash>]
//	                                                someone else starts a migration,
//	                                                which the trigger saw pending at
//	                                                that StorageVersion resourceVersion
//	                                                (or, from discovery, hash)
//	end phase=... [name=<name>] [progress=<hash>]   that migration ends, having
//	                                                resolved that version hash
//	migrations                                      lists the migrations
//
// observe prints what plan decided; the decision is applied to the world (launched
// migrations are created, adopted ones become the trigger's, aborted ones end). Run
// with -rewrite to update the files.
func TestLifecycle(t *testing.T) {
	datadriven.Walk(t, "testdata/lifecycle", func(t *testing.T, path string) {
		w := &world{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "observe":
				return w.observe(t, d)
			case "end":
				return w.end(t, d)
			case "after":
				dur, err := time.ParseDuration(d.CmdArgs[0].Key)
				if err != nil {
					d.Fatalf(t, "after: %v", err)
				}
				w.now = w.now.Add(dur)
				return w.now.Format(time.RFC3339)
			case "create":
				var name string
				d.ScanArgs(t, "name", &name)
				m := migrationSummary{Name: name, Phase: migrationapi.ConditionRunning}
				if d.HasArg("seen-rv") || d.HasArg("seen-hash") {
					m.Sighting = &sighting{}
					d.MaybeScanArgs(t, "seen-rv", &m.Sighting.StorageVersionRV)
					d.MaybeScanArgs(t, "seen-hash", &m.Sighting.Hash)
				}
				w.migs = append(w.migs, m)
				return name + " " + migrationapi.ConditionRunning
			case "migrations":
				var b strings.Builder
				for _, m := range w.migs {
					fmt.Fprintf(&b, "%s %s triggered=%v\n", m.Name, m.Phase, m.Triggered)
				}
				return b.String()
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}

// observe runs plan on what d says the servers report, applies its decision to the
// world, and describes the decision.
func (w *world) observe(t *testing.T, d *datadriven.TestData) string {
	var obs observation
	d.MaybeScanArgs(t, "rv", &obs.ResourceVersion)
	if d.MaybeScanArgs(t, "agreed", &obs.Current) {
		obs.Agreed, obs.Reported = true, []string{obs.Current}
	} else {
		arg, _ := d.Arg("reported")
		obs.Reported = arg.Vals
	}
	in := lifecycleInput{Now: w.now, State: w.state, Observed: obs, Latest: w.latest(), Carried: d.HasArg("carried")}
	for _, m := range w.migs {
		if !m.terminal() {
			in.Active = append(in.Active, m)
		}
		if !m.Triggered {
			in.Foreign = append(in.Foreign, m)
		}
	}
	in.ConsecutiveFailures = consecutiveFailures(w.migs, obs.Current)
	out := plan(in, testCfg)

	// Invariants every decision keeps: the status is written exactly when it changed
	// or its heartbeat is due, and a written status carries the current time.
	st := out.Status
	due := w.state == nil || !slices.Equal(w.state.PersistedStorageVersionHashes, st.PersistedStorageVersionHashes) ||
		w.state.CurrentStorageVersionHash != st.CurrentStorageVersionHash || w.now.Sub(w.state.LastHeartbeatTime.Time) >= testCfg.Heartbeat
	if out.WriteStatus != due {
		t.Fatalf("%s: WriteStatus = %v with state %+v", d.Pos, out.WriteStatus, w.state)
	}
	if out.WriteStatus && !st.LastHeartbeatTime.Time.Equal(w.now) {
		t.Fatalf("%s: heartbeat %v, want %v", d.Pos, st.LastHeartbeatTime, w.now)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "persisted=%v current=%s", st.PersistedStorageVersionHashes, st.CurrentStorageVersionHash)
	if out.Reset {
		b.WriteString(" reset")
	}
	if out.WriteStatus {
		b.WriteString(" write")
	}
	b.WriteString("\n")
	for _, a := range out.Abort {
		fmt.Fprintf(&b, "abort %s: %s\n", a.Name, a.Reason)
		for j := range w.migs {
			if w.migs[j].Name == a.Name {
				w.migs[j].Phase, w.migs[j].Aborted, w.migs[j].Finished = migrationapi.ConditionFailed, true, w.now
			}
		}
	}
	if out.Adopt != "" {
		for j := range w.migs {
			if m := &w.migs[j]; m.Name == out.Adopt {
				m.Triggered, m.Hash, m.StorageVersionRV, m.Sequence = true, obs.Current, obs.ResourceVersion, w.nextSequence()
			}
		}
		fmt.Fprintf(&b, "adopt %s\n", out.Adopt)
	}
	if out.Launch {
		seq := w.nextSequence()
		name := migrationName("widgets.example.com", seq)
		w.migs = append(w.migs, migrationSummary{Name: name, Sequence: seq, Triggered: true,
			Hash: obs.Current, StorageVersionRV: obs.ResourceVersion, Phase: "Pending"})
		fmt.Fprintf(&b, "launch %s\n", name)
	}
	if out.RequeueAfter > 0 {
		fmt.Fprintf(&b, "requeue after %v\n", out.RequeueAfter)
	}
	w.state = &st
	return b.String()
}

// nextSequence is the number of the trigger's next migration, as apply numbers it.
func (w *world) nextSequence() int {
	n := 0
	for _, m := range w.migs {
		n = max(n, sequenceOf(m.Name), m.Sequence)
	}
	return n + 1
}

// end ends the named migration (default: the trigger's latest) as d says.
func (w *world) end(t *testing.T, d *datadriven.TestData) string {
	var phase, reason, name string
	d.ScanArgs(t, "phase", &phase)
	d.MaybeScanArgs(t, "reason", &reason)
	m := w.latest()
	if d.MaybeScanArgs(t, "name", &name) {
		for i := range w.migs {
			if w.migs[i].Name == name {
				m = &w.migs[i]
			}
		}
	}
	if m == nil || (name != "" && m.Name != name) {
		d.Fatalf(t, "end: no migration %q", name)
	}
	d.MaybeScanArgs(t, "progress", &m.ProgressHash)
	m.Phase, m.Finished = phase, w.now
	m.Aborted = reason == migrationapi.ReasonStorageVersionsDisagree || reason == migrationapi.ReasonStorageVersionChanged
	return fmt.Sprintf("%s %s", m.Name, m.Phase)
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
	m := &migrationapi.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com-7", Annotations: map[string]string{
		migrationapi.AnnotationStorageVersionHash: "h", migrationapi.AnnotationStorageVersionResourceVersion: "42"}}}
	m.Status.Conditions = []metav1.Condition{
		{Type: migrationapi.ConditionRunning, Status: metav1.ConditionFalse, Reason: migrationapi.ReasonStorageVersionsDisagree},
		{Type: migrationapi.ConditionFailed, Status: metav1.ConditionTrue, Reason: migrationapi.ReasonStorageVersionsDisagree, LastTransitionTime: done},
	}
	got := summarize(m)
	want := migrationSummary{Name: m.Name, Sequence: 7, Triggered: true, Hash: "h", StorageVersionRV: "42", Phase: migrationapi.ConditionFailed, Aborted: true, Finished: done.Time}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
	user := summarize(&migrationapi.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "by-hand-3"}})
	if user.Triggered || user.Sequence != 0 || user.Phase != "Pending" {
		t.Errorf("a migration without the trigger's annotations: %+v", user)
	}
	adopted := &migrationapi.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com-x7k2p", Annotations: map[string]string{
		migrationapi.AnnotationStorageVersionHash: "h", migrationapi.AnnotationSequence: "12"}}}
	adopted.Status.Progress = &migrationapi.Progress{StorageVersionHash: "h"}
	if got := summarize(adopted); !got.Triggered || got.Sequence != 12 || got.ProgressHash != "h" {
		t.Errorf("an adopted migration: %+v, want the trigger's, number 12, progress hash h", got)
	}
}
