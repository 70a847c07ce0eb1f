package safety

import (
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/concordproject/concord/wire"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

var (
	onlyFlag             = flag.String("only", "", "TestTorture runs only the scenarios of this kind")
	migrationObjectsFlag = flag.Int("migration-kill-objects", 1000000, "how many widgets the migration-kill scenario migrates; past 2000 the rest are written straight into etcd")
)

// scenarioFunc runs one scenario, from its seed, on a fleet of its own.
type scenarioFunc func(t *testing.T, rep *report, seed uint64)

// short is the profile of `go test ./...`: a rolling upgrade with a CRD flip, a
// rollback (emulation, then binary) checked by upgrade-check after a refused one, a
// partition, and CRD served versions added and removed.
var short = []struct {
	name string
	run  scenarioFunc
}{
	{"rolling-upgrade", rollingUpgrade},
	{"rollback", rollback},
	{"partition", partition},
	{"served-versions", servedVersions},
}

// torture adds the long profile's scenarios to the short ones.
var torture = append(short[:len(short):len(short)], []struct {
	name string
	run  scenarioFunc
}{
	{"skip-level", skipLevel},
	{"member-loss", memberLoss},
	{"migration-kill", migrationKill},
	{"refused-rollback", refusedRollback},
	{"kube-fleet", kubeFleet},
}...)

func TestSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("the safety suite starts real fleets")
	}
	rep := &report{}
	s := seed(t)
	// The scenarios run side by side (each its own etcd, fleet, ports and directories),
	// as many at once as -parallel allows; the group returns once all have ended.
	t.Run("scenarios", func(t *testing.T) {
		for i, sc := range short {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				sc.run(t, rep, s+uint64(i))
			})
		}
	})
	t.Logf("report:\n%s", rep)
}

// TestTorture runs random scenarios of every kind for -duration, then prints the
// report.
func TestTorture(t *testing.T) {
	if *durationFlag <= 0 {
		t.Skip("run with -args -duration 30m [-seed N]")
	}
	rep := &report{}
	s := seed(t)
	deadline := time.Now().Add(*durationFlag)
	kinds := torture
	if *onlyFlag != "" {
		kinds = slices.DeleteFunc(slices.Clone(torture), func(k struct {
			name string
			run  scenarioFunc
		}) bool {
			return k.name != *onlyFlag
		})
	}
	for i := 0; time.Now().Before(deadline); i++ {
		sc := kinds[(int(s%1000)+i)%len(kinds)]
		t.Run(fmt.Sprintf("%03d-%s", i, sc.name), func(t *testing.T) { sc.run(t, rep, s+uint64(i)) })
	}
	fmt.Printf("safety report (seed %d, %v):\n%s", s, *durationFlag, rep)
}

// rollingUpgrade: three servers of N-1, once settled, rolled to N one at a time
// (graceful stops and kill -9 at random), the widgets' storage version flipped after
// the first server is upgraded, writers throughout.
func rollingUpgrade(t *testing.T, rep *report, seed uint64) {
	v := versions(t)
	f := newFleet(t, rep, "rolling-upgrade", seed, 1, release{binary: v[1]}, release{binary: v[1]}, release{binary: v[1]})
	f.createWidgets()
	tr := f.startTraffic(4)
	// Asked before the new fleet's first migrations are done, upgrade-check rightly
	// refuses (a StorageState still Unknown): the verdict that counts is the settled
	// fleet's.
	f.waitSettled("on " + v[1])
	safe, out := f.roll(release{}, func(i int) {
		if i == 0 {
			f.storeWidgetsAs("v2")
		}
	})
	if !safe {
		f.anomaly("upgrade-check calls the upgrade to %s unsafe, and the scenario makes it: %s", v[0], out)
	}
	f.finish(tr)
}

// rollback: three servers of N, holding fields of N-1, refuse a rollback to N-2
// (upgrade-check blocks it, a server of N-2 beside them refuses to join); rolled back
// to emulate N-1 (KEP-4330's rollback), then, once upgrade-check calls it safe, to the
// binary N-1, which knows the fields; a migration of the PodTemplates, made by hand,
// rewrites them through servers of N-1.
func rollback(t *testing.T, rep *report, seed uint64) {
	v := versions(t)
	f := newFleet(t, rep, "rollback", seed, 1, release{}, release{}, release{})
	f.createWidgets()
	tr := f.startTraffic(4)
	f.storeWidgetsAs("v2")
	f.probeRefusal(v[2], nil)
	f.roll(release{emulation: v[1]}, nil)
	f.waitSettled("at emulation " + v[1])
	if safe, out := f.roll(release{binary: v[1]}, nil); !safe {
		f.anomaly("upgrade-check calls the rollback to %s unsafe after the emulation rollback: %s", v[1], out)
	}
	f.migratePodTemplates()
	f.finish(tr)
}

// refusedRollback: three servers of N, holding fields of N-1, refuse a rollback to
// N-2: upgrade-check blocks it and one of them, restarted as N-2, refuses to join.
// Then the operator lowers their minimum compatibility version to N-2 and rolls back
// anyway: upgrade-check still blocks (the field), the servers of N-2 join and drop the
// field from every object they write. Those losses are what the refusal foretold: the
// report lists them, and they show that the checker sees a lost field.
func refusedRollback(t *testing.T, rep *report, seed uint64) {
	v := versions(t)
	f := newFleet(t, rep, "refused-rollback", seed, 1, release{}, release{}, release{})
	f.createWidgets()
	tr := f.startTraffic(2)
	f.probeRefusal(v[2], f.servers[f.rng.IntN(len(f.servers))])
	if safe, out := f.roll(release{minCompat: v[2]}, nil); !safe {
		f.anomaly("upgrade-check calls lowering the minimum compatibility version to %s unsafe: %s", v[2], out)
	}
	f.waitSettled("at minimum compatibility " + v[2])
	path := f.fields.newestField(v[1])
	if safe, out := f.roll(release{binary: v[2]}, nil); safe {
		f.anomaly("upgrade-check approves the rollback to %s while %s is stored:\n%s", v[2], path, out)
	}
	// The servers of N-2 drop the field from what they write: the label patches of the
	// sticky templates. Wait for the loss (it is not an anomaly if none comes).
	if !waitFor(60*time.Second, func() bool { return f.fields.expectedLosses() > 0 || f.storedWith(path) == 0 }) {
		t.Logf("no server of %s dropped %s within 60s", v[2], path)
	}
	f.migratePodTemplates()
	f.settleFields("the rollback to " + v[2])
	f.finish(tr)
}

// partition: one server of three cut off from etcd for three lease durations, then
// healed.
func partition(t *testing.T, rep *report, seed uint64) {
	f := newFleet(t, rep, "partition", seed, 1, release{}, release{}, release{})
	f.createWidgets()
	tr := f.startTraffic(4)
	time.Sleep(time.Second)
	s := f.servers[f.rng.IntN(len(f.servers))]
	f.fault("cut " + s.id + " off from etcd")
	s.proxy.Cut()
	waitUntil(t, 3*leaseDuration+10*time.Second, "the entries of "+s.id+" to be collected", func() bool {
		for _, e := range f.storageVersionOf(t, "core.configmaps").StorageVersions {
			if e.APIServerID == s.id {
				return false
			}
		}
		return true
	})
	if err := s.ready(t); err == nil {
		f.anomaly("%s is cut off from etcd, its entries collected, and /readyz is ok", s.id)
	}
	time.Sleep(time.Duration(f.rng.IntN(3000)) * time.Millisecond)
	f.fault("heal " + s.id)
	s.proxy.Heal()
	waitRunning(t, s.proc, s.id+" to be ready again", func() bool { return s.ready(t) == nil })
	f.finish(tr)
}

// skipLevel: three servers of N-3 moved to the binary N emulating N-3, then the
// emulation stepped up one release at a time, settling between steps.
func skipLevel(t *testing.T, rep *report, seed uint64) {
	v := versions(t)
	f := newFleet(t, rep, "skip-level", seed, 1, release{binary: v[3]}, release{binary: v[3]}, release{binary: v[3]})
	f.createWidgets()
	tr := f.startTraffic(4)
	for _, e := range []string{v[3], v[2], v[1], ""} {
		f.roll(release{emulation: e}, nil)
		f.waitSettled("at emulation " + e)
	}
	f.finish(tr)
}

// memberLoss: a three-member etcd loses one member (kill -9) for a while under traffic,
// with a CRD storage flip meanwhile.
func memberLoss(t *testing.T, rep *report, seed uint64) {
	f := newFleet(t, rep, "member-loss", seed, 3, release{}, release{}, release{})
	f.createWidgets()
	tr := f.startTraffic(4)
	m := f.members[f.rng.IntN(len(f.members))]
	f.fault("kill -9 etcd member " + m.name)
	m.proc.stop(t, false)
	f.storeWidgetsAs("v2")
	time.Sleep(time.Duration(2000+f.rng.IntN(3000)) * time.Millisecond)
	var initial []string
	for _, o := range f.members {
		initial = append(initial, o.name+"="+o.peerURL)
	}
	f.fault("restart etcd member " + m.name)
	m.start(t, f.dir, joinComma(initial), "existing")
	f.finish(tr)
}

// migrationKill: widgets stored in v1 (two thousand created through the servers, and
// past -migration-kill-objects' first two thousand, copies of one of them written
// straight into etcd), their storage version flipped to v2, and the migration leader
// (whose rewrite requests it serves itself) killed with -9 once it has rewritten up to
// half of them, then restarted.
func migrationKill(t *testing.T, rep *report, seed uint64) {
	n := max(*migrationObjectsFlag, 1)
	f := newFleet(t, rep, "migration-kill", seed, 1, release{}, release{}, release{})
	f.createWidgets()
	f.seedWidgets(min(n, apiSeeded))
	if n > apiSeeded {
		f.seedStored(apiSeeded, n)
	}
	// Three servers, etcd and the writers on one machine migrate a few thousand widgets
	// a second: a million take minutes, and longer to settle after a kill.
	f.settleWithin = 3*time.Minute + time.Duration(n/1000)*time.Second
	tr := f.startTraffic(2)
	f.storeWidgetsAs("v2")
	leader := f.migrationLeader()
	// Killed once the migration has rewritten some of the widgets (up to half), or
	// has ended.
	name, target := wire.StorageVersionName(widgets.GroupResource()), 1+f.rng.IntN(n/2+1)
	waitUntil(t, f.settleWithin, "the widgets' migration", func() bool {
		v2 := f.check.encodings(name, widgets.Group+"/v2")
		return v2 >= target || f.check.encodings(name, widgets.Group+"/v1") == 0
	})
	f.stop(leader, false)
	t.Logf("%s killed with %d widgets stored in v2 and %d in v1", leader.id,
		f.check.encodings(name, widgets.Group+"/v2"), f.check.encodings(name, widgets.Group+"/v1"))
	time.Sleep(time.Second)
	f.restart(leader, release{binary: leader.binary, emulation: leader.emulation, minCompat: leader.minCompat})
	f.finish(tr)
}

// servedVersions: a version added to the widgets (v3), made the storage version and
// migrated to, then v2 no longer served, then removed from the definition, writers
// throughout (they use v1).
func servedVersions(t *testing.T, rep *report, seed uint64) {
	f := newFleet(t, rep, "served-versions", seed, 1, release{}, release{}, release{})
	f.createWidgets()
	tr := f.startTraffic(4)
	f.editWidgets("add v3", func(crd *apiextensionsv1.CustomResourceDefinition) {
		v3 := *crd.Spec.Versions[0].DeepCopy()
		v3.Name, v3.Storage = "v3", false
		crd.Spec.Versions = append(crd.Spec.Versions, v3)
	})
	f.storeWidgetsAs("v3")
	f.waitSettled("with widgets stored as v3")
	f.editWidgets("stop serving v2", func(crd *apiextensionsv1.CustomResourceDefinition) {
		for i := range crd.Spec.Versions {
			if crd.Spec.Versions[i].Name == "v2" {
				crd.Spec.Versions[i].Served = false
			}
		}
	})
	time.Sleep(time.Duration(500+f.rng.IntN(1500)) * time.Millisecond)
	f.editWidgets("remove v2", func(crd *apiextensionsv1.CustomResourceDefinition) {
		crd.Spec.Versions = slices.DeleteFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == "v2" })
	})
	f.finish(tr)
}
