package trigger

import (
	"fmt"
	"slices"
	"strings"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/migration/guard"
	"github.com/concordproject/concord/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// observation is what the trigger knows of how one resource is written now: from its
// StorageVersion object, or from discovery.
type observation = guard.Observation

// migrationSummary is what the trigger needs of one StorageVersionMigration.
type migrationSummary struct {
	Name string
	// Sequence orders the trigger's migrations of a resource (the number ending the
	// name); 0 for migrations the trigger did not create.
	Sequence int
	// Triggered is true for migrations the trigger created (they carry its
	// annotations).
	Triggered bool
	// Hash and StorageVersionRV are the trigger's annotations.
	Hash, StorageVersionRV string
	// Phase is Pending, Running, Succeeded or Failed.
	Phase string
	// Aborted is true for a migration the trigger stopped (its Failed condition has
	// one of the trigger's reasons).
	Aborted bool
	// Finished is when it became Succeeded or Failed.
	Finished time.Time
	// ProgressHash is its progress's storageVersionHash (status.progress, or the
	// migrationapi.AnnotationProgress annotation where the API drops it): the version
	// hash the migrator resolved when it started ("" before).
	ProgressHash string
	// Sighting is what the trigger observed when it first saw the migration, still
	// pending, if it did not create it; nil if it never saw it pending.
	Sighting *sighting
}

// sighting is what the trigger observed of a resource when it first saw a migration
// of it that it did not create, still pending: the resource's StorageVersion object's
// resourceVersion ("" without one) and the hash discovery published.
type sighting struct {
	StorageVersionRV string
	Hash             string
}

func (m *migrationSummary) terminal() bool {
	return m.Phase == migrationapi.ConditionSucceeded || m.Phase == migrationapi.ConditionFailed
}

// lifecycleInput is everything the life-cycle of one StorageState depends on.
type lifecycleInput struct {
	Now time.Time
	// State is the stored status, nil if there is no StorageState.
	State    *migrationapi.StorageStateStatus
	Observed observation
	// Latest is the trigger's latest migration of the resource, nil if none.
	Latest *migrationSummary
	// Carried is true when Latest is for Observed.Current but started at an older
	// resourceVersion of the StorageVersion object, and every revision of the object
	// since had the servers agree on Observed.Current (guard.Carried): Latest still
	// counts, and the controller moves its guard forward when its rewrites meet the
	// change.
	Carried bool
	// ConsecutiveFailures counts the trigger's latest migrations of the resource
	// that failed (not aborted) one after the other, Latest included.
	ConsecutiveFailures int
	// Active are the resource's migrations that have not ended, the trigger's or not.
	Active []migrationSummary
	// Foreign are the resource's migrations the trigger did not create and has not
	// adopted, ended or not.
	Foreign []migrationSummary
}

// lifecycleConfig are the trigger's timings.
type lifecycleConfig struct {
	// Heartbeat is how often lastHeartbeatTime is renewed.
	Heartbeat time.Duration
	// Staleness is the age of lastHeartbeatTime beyond which the state is reset.
	Staleness time.Duration
	// RetryFailed is the wait before a failed migration is started again; it doubles
	// with each consecutive failure, up to maxRetryDelay.
	RetryFailed time.Duration
}

const maxRetryDelay = 6 * time.Hour

// abort is a migration to stop, and why.
type abort struct {
	Name, Reason, Message string
}

// lifecycleOutput is what the trigger must do for one resource.
type lifecycleOutput struct {
	// Status is the StorageState status to store; WriteStatus says whether it differs
	// from the stored one (or there is none).
	Status      migrationapi.StorageStateStatus
	WriteStatus bool
	// Reset is true when the state was created or found stale.
	Reset bool
	// Launch asks for a new migration to Observed.Current.
	Launch bool
	// Adopt names a migration of Foreign to make the trigger's latest instead of
	// launching one.
	Adopt string
	// Abort lists the migrations to stop.
	Abort []abort
	// RequeueAfter, if positive, is when to look again (a failed migration's retry).
	RequeueAfter time.Duration
}

// plan applies the StorageState life-cycle of the storage-version migration KEP,
// with the HA rules Concord adds, to one resource:
//
//   - a missing state is created with persisted ["Unknown"] (and current set); a
//     state whose heartbeat is older than the staleness window is reset to the same
//     (objects written while nobody watched may be in any version);
//   - while the servers disagree (no common encoding version) every reported hash is
//     added to persisted, current becomes "Unknown", no migration starts and running
//     ones are aborted;
//   - when they agree on a hash that is not current, it is appended to persisted and
//     becomes current, and a migration is launched;
//   - while persisted is not just current, the trigger's latest migration must be for
//     current, started at the StorageVersion resourceVersion now observed or at one
//     from which every revision agreed on current (Carried): if it is running, wait; if it succeeded, persisted becomes [current]; if it failed, it is
//     launched again after a delay; otherwise (none, another hash, another
//     resourceVersion, aborted) a new one is launched and the others aborted;
//   - where it would launch one or wait to, it adopts instead a migration someone
//     else created (adoptable says which) and treats it as its own latest: if that
//     one already succeeded, persisted becomes [current].
//
// After a reset, a migration started before the reset counts only if it carries the
// StorageVersion resourceVersion still observed: from discovery nothing proves what
// happened meanwhile, so a new migration is launched.
func plan(in lifecycleInput, cfg lifecycleConfig) lifecycleOutput {
	var out lifecycleOutput
	var st migrationapi.StorageStateStatus
	if in.State != nil {
		st = *in.State
		st.PersistedStorageVersionHashes = slices.Clone(in.State.PersistedStorageVersionHashes)
	}
	stale := in.State != nil && in.Now.Sub(in.State.LastHeartbeatTime.Time) > cfg.Staleness
	out.Reset = in.State == nil || stale
	if out.Reset {
		st.PersistedStorageVersionHashes = []string{migrationapi.Unknown}
		st.CurrentStorageVersionHash = ""
	}
	obs := in.Observed
	if !obs.Agreed {
		for _, h := range obs.Reported {
			st.PersistedStorageVersionHashes = appendMissing(st.PersistedStorageVersionHashes, h)
		}
		st.CurrentStorageVersionHash = migrationapi.Unknown
		for _, m := range in.Active {
			out.Abort = append(out.Abort, abort{Name: m.Name, Reason: migrationapi.ReasonStorageVersionsDisagree,
				Message: "The API servers no longer agree on an encoding version or encryption key; a migration starts once they do."})
		}
		return finish(in, st, out, cfg)
	}
	h := obs.Current
	if st.CurrentStorageVersionHash != h {
		if !out.Reset { // a reset state already covers every version with Unknown
			st.PersistedStorageVersionHashes = appendMissing(st.PersistedStorageVersionHashes, h)
		}
		st.CurrentStorageVersionHash = h
	}
	var keep string // the migration to let run
	if !slices.Equal(st.PersistedStorageVersionHashes, []string{h}) {
		latest := in.Latest
		if out.Reset && obs.ResourceVersion == "" {
			latest = nil
		}
		matches := latest != nil && latest.Hash == h &&
			(obs.ResourceVersion == "" || latest.StorageVersionRV == obs.ResourceVersion || in.Carried)
		adopt := adoptable(in.Foreign, obs)
		switch {
		case matches && !latest.terminal():
			keep = latest.Name
		case matches && latest.Phase == migrationapi.ConditionSucceeded:
			st.PersistedStorageVersionHashes = []string{h}
		case adopt != nil:
			out.Adopt = adopt.Name
			if adopt.Phase == migrationapi.ConditionSucceeded {
				st.PersistedStorageVersionHashes = []string{h}
			}
		case matches && !latest.Aborted:
			wait := retryDelay(cfg.RetryFailed, in.ConsecutiveFailures)
			if elapsed := in.Now.Sub(latest.Finished); elapsed < wait {
				out.RequeueAfter = wait - elapsed
			} else {
				out.Launch = true
			}
		default:
			out.Launch = true
		}
	}
	for _, m := range in.Active {
		if m.Triggered && m.Name != keep {
			out.Abort = append(out.Abort, abort{Name: m.Name, Reason: migrationapi.ReasonStorageVersionChanged,
				Message: "The storage version, or the StorageVersion object, changed after this migration started; a new migration replaces it."})
		}
	}
	return finish(in, st, out, cfg)
}

// adoptable returns the migration of foreign the trigger may adopt as its latest
// for obs.Current, or nil: one it saw created, still pending, while the resource's
// StorageVersion object was at the resourceVersion still observed (from discovery:
// while the hash was already the current one), so that, like the trigger's own, it
// proves the objects are in the current version once it succeeds; and that has not
// failed, and that, if it has started, resolved the current version. A success is
// preferred, then the first by name.
func adoptable(foreign []migrationSummary, obs observation) *migrationSummary {
	if !obs.Agreed {
		return nil
	}
	version, _ := wire.SplitStorageHash(obs.Current)
	var best *migrationSummary
	for i := range foreign {
		m := &foreign[i]
		s := m.Sighting
		switch {
		case m.Triggered || s == nil || m.Phase == migrationapi.ConditionFailed:
			continue
		case s.StorageVersionRV != obs.ResourceVersion || (obs.ResourceVersion == "" && s.Hash != obs.Current):
			continue
		case m.ProgressHash != "" && m.ProgressHash != version:
			continue
		case m.Phase == migrationapi.ConditionSucceeded && m.ProgressHash == "":
			continue
		}
		if best == nil || adoptionRank(m) < adoptionRank(best) || adoptionRank(m) == adoptionRank(best) && m.Name < best.Name {
			best = m
		}
	}
	return best
}

// adoptionRank orders the migrations adoptable chooses from: successes first.
func adoptionRank(m *migrationSummary) int {
	if m.Phase == migrationapi.ConditionSucceeded {
		return 0
	}
	return 1
}

// finish renews the heartbeat when due or when anything changes.
func finish(in lifecycleInput, st migrationapi.StorageStateStatus, out lifecycleOutput, cfg lifecycleConfig) lifecycleOutput {
	changed := in.State == nil ||
		!slices.Equal(st.PersistedStorageVersionHashes, in.State.PersistedStorageVersionHashes) ||
		st.CurrentStorageVersionHash != in.State.CurrentStorageVersionHash
	if changed || in.Now.Sub(st.LastHeartbeatTime.Time) >= cfg.Heartbeat {
		st.LastHeartbeatTime = metav1.NewTime(in.Now)
		out.WriteStatus = true
	}
	out.Status = st
	return out
}

// retryDelay is the wait before retrying after n consecutive failures.
func retryDelay(base time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < maxRetryDelay; i++ {
		d *= 2
	}
	return min(d, maxRetryDelay)
}

func appendMissing(list []string, h string) []string {
	if h == "" || slices.Contains(list, h) {
		return list
	}
	return append(list, h)
}

// summarize extracts what the trigger needs of m.
func summarize(m *migrationapi.StorageVersionMigration) migrationSummary {
	s := migrationSummary{
		Name:             m.Name,
		Hash:             m.Annotations[migrationapi.AnnotationStorageVersionHash],
		StorageVersionRV: m.Annotations[migrationapi.AnnotationStorageVersionResourceVersion],
		Phase:            m.Phase(),
	}
	if p := migrationapi.ProgressOf(m.Status.Progress, m.Annotations); p != nil {
		s.ProgressHash = p.StorageVersionHash
	}
	if _, ok := m.Annotations[migrationapi.AnnotationStorageVersionHash]; ok {
		s.Triggered = true
		s.Sequence = sequenceOf(m.Name)
		if n, ok := m.Annotations[migrationapi.AnnotationSequence]; ok {
			s.Sequence = parseSequence(n)
		}
	}
	if s.terminal() {
		if c := migrationapi.FindCondition(m.Status.Conditions, s.Phase); c != nil {
			s.Finished = c.LastTransitionTime.Time
			s.Aborted = s.Phase == migrationapi.ConditionFailed &&
				(c.Reason == migrationapi.ReasonStorageVersionsDisagree || c.Reason == migrationapi.ReasonStorageVersionChanged)
		}
	}
	return s
}

// migrationName is the name of the trigger's n-th migration of the resource whose
// StorageState is named state.
func migrationName(state string, n int) string {
	suffix := fmt.Sprintf("-%d", n)
	const maxName = 253
	if len(state)+len(suffix) > maxName {
		state = strings.TrimRight(state[:maxName-len(suffix)], ".-")
	}
	return state + suffix
}

// sequenceOf returns n of a name made by migrationName (0 if there is none).
func sequenceOf(name string) int {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return 0
	}
	return parseSequence(name[i+1:])
}

// parseSequence returns the positive number s spells in decimal, 0 if it spells none.
func parseSequence(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' || n > 1<<30 {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}
