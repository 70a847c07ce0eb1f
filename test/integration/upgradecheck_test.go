package integration

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/upgradecheck"
	"github.com/concordproject/concord/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// `concord upgrade-check` against a real cluster: a server of 1.30 run with
// --min-compatibility-version=1.28 and the StorageVersion API on, whose storage
// migration controllers (run by the test, so that it can stop them) have recorded
// every resource's StorageState. flowschemas are stored in v1beta3 there: 1.28 reads
// them, 1.25 does not (nor v1, which 1.30 would store by default).
func TestUpgradeCheck(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		o.DisableStorageMigration = true
		o.Compatibility.BinaryVersion = "1.30"
		o.Compatibility.MinCompatibilityVersion = []string{"1.28"}
		o.Compatibility.FeatureGates = []string{"StorageVersionAPI=true"}
		o.Compatibility.RuntimeConfig = []string{"internal.apiserver.k8s.io/v1alpha1=true"}
	}))
	s := c.Servers[0]
	dyn := s.Dynamic(t)
	stop := runControllers(t, fastConfig(s.Config(), nil))
	waitSettled(t, dyn)
	run := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd := upgradecheck.NewCommand()
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(append([]string{"--kubeconfig", s.KubeconfigPath}, args...))
		err := cmd.ExecuteContext(t.Context())
		t.Logf("upgrade-check %s:\n%s%s", strings.Join(args, " "), out.String(), errOut.String())
		return out.String(), err
	}
	const flowschemas = "flowschemas.flowcontrol.apiserver.k8s.io"

	t.Run("safe", func(t *testing.T) {
		for _, to := range []string{"1.30", "1.37", "1.28"} {
			out, err := run(t, "--to-version", to)
			if err != nil {
				t.Fatalf("--to-version %s: %v", to, err)
			}
			move := map[string]string{"1.30": "Release 1.30 (the release running)", "1.37": "Upgrade from 1.30 to 1.37", "1.28": "Rollback from 1.30 to 1.28"}[to]
			wantLines(t, out, regexp.QuoteMeta(move)+" is safe", "RELEASE "+to+" DECODES", flowschemas+" +v1beta3 .* ok ")
			if to == "1.28" { // ValidatingAdmissionPolicies are beta there, off by default
				wantLines(t, out, "validatingadmissionpolicies.admissionregistration.k8s.io: release 1.28 would not serve it")
			}
		}
	})

	t.Run("no safe path", func(t *testing.T) {
		out, err := run(t, "--to-version", "1.25")
		if !errors.Is(err, upgradecheck.ErrNotSafe) || !strings.HasPrefix(err.Error(), "rollback from 1.30 to 1.25 is not safe: the servers' minimum compatibility version is 1.28; 2 resources block: "+flowschemas+", prioritylevelconfigurations.") {
			t.Fatalf("err = %v", err)
		}
		wantLines(t, out, flowschemas+" +v1beta3 +v1beta2,v1beta1 +BLOCKED +via 1.27 --min-compatibility-version=1.25",
			"Safe path: move to release 1.27 with --min-compatibility-version=1.25 first")
	})

	t.Run("stale states", func(t *testing.T) {
		_, err := run(t, "--to-version", "1.30", "--staleness-window", "1ns")
		if !errors.Is(err, upgradecheck.ErrNotSafe) || !strings.Contains(err.Error(), "storageversionmigrations.storagemigration.k8s.io") {
			t.Fatalf("with every StorageState stale, Concord's own migrations (the catalog had v1alpha1) block: %v", err)
		}
	})

	t.Run("invalid flags", func(t *testing.T) {
		for _, args := range [][]string{
			nil,
			{"--to-version", "1.50"},
			{"--to-version", "one.twenty"},
			{"--to-version", "1.30", "--emulation-version", "1.20"},
		} {
			out, err := run(t, args...)
			if !errors.Is(err, upgradecheck.ErrFlag) || strings.Contains(err.Error(), "\n") || out != "" {
				t.Errorf("%v: err = %v, output %q: want one line and no table", args, err, out)
			}
			if want := "1.20 to 1.40"; len(args) < 3 && !strings.Contains(err.Error(), want) {
				t.Errorf("%v: %v does not say %q", args, err, want)
			}
		}
	})

	// Objects written in v1 before the servers were told to stay readable by 1.28:
	// the migration to v1beta3 unblocks the rollback.
	t.Run("migration unblocks", func(t *testing.T) {
		stop()
		gr := schema.GroupResource{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"}
		hash := func(v string) string { return wire.StorageVersionHash(gr.Group, v, "FlowSchema") }
		setState(t, dyn, gr, hash("v1beta3"), hash("v1"), hash("v1beta3"))
		out, err := run(t, "--to-version", "1.28")
		if !errors.Is(err, upgradecheck.ErrNotSafe) || err.Error() != "rollback from 1.30 to 1.28 is not safe: 1 resources block: "+flowschemas {
			t.Fatalf("err = %v", err)
		}
		wantLines(t, out, flowschemas+" +v1,v1beta3 +v1beta3,v1beta2,v1beta1 +BLOCKED +migrate to v1beta3",
			"objects may be encoded in v1, which release 1.28 cannot decode",
			"kubectl create -f - <<EOF", "  generateName: "+flowschemas+"-")
	})
}

// waitSettled waits until every resource with a StorageVersion (but Events, which the
// trigger leaves alone) has a StorageState whose persisted hashes are the current
// one alone.
func waitSettled(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	var pending []string
	defer func() {
		if t.Failed() {
			t.Logf("not settled: %v", pending)
		}
	}()
	// One migration per resource: on a loaded machine they take long, so the wait
	// fails only when no migration has moved for a while.
	waitUnstalled(t, "every StorageState to settle", func() (bool, string, error) {
		svs, err := dyn.Resource(migrationapi.StorageVersions).List(t.Context(), metav1.ListOptions{})
		if err != nil || len(svs.Items) == 0 {
			return false, "no StorageVersions", err
		}
		pending = nil
		for _, sv := range svs.Items {
			gr, ok := wire.ParseStorageVersionName(sv.GetName())
			if !ok || gr.Resource == "events" || notMigrated[gr] {
				continue
			}
			st := getState(t, dyn, gr)
			if st == nil || st.Status.CurrentStorageVersionHash == migrationapi.Unknown ||
				!slices.Equal(st.Status.PersistedStorageVersionHashes, []string{st.Status.CurrentStorageVersionHash}) {
				pending = append(pending, sv.GetName())
			}
		}
		if len(pending) == 0 {
			return true, "", nil
		}
		mark, err := migrationsMark(t.Context(), dyn)
		return false, fmt.Sprintf("%d pending; %s", len(pending), mark), err
	})
}

// notMigrated are the stored resources the trigger leaves alone because they cannot be
// rewritten: Bindings are created only, ComponentStatuses read only (as kube serves them).
var notMigrated = map[schema.GroupResource]bool{{Resource: "bindings"}: true, {Resource: "componentstatuses"}: true}

// setState writes gr's StorageState status as a trigger would, heartbeat now.
func setState(t *testing.T, dyn dynamic.Interface, gr schema.GroupResource, current string, persisted ...string) {
	t.Helper()
	client := dyn.Resource(migrationapi.StorageStates)
	u, err := client.Get(t.Context(), migrationapi.StorageStateName(gr), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := migrationapi.StateFrom(u)
	if err != nil {
		t.Fatal(err)
	}
	st.Status = migrationapi.StorageStateStatus{PersistedStorageVersionHashes: persisted, CurrentStorageVersionHash: current, LastHeartbeatTime: metav1.NewTime(time.Now())}
	if u, err = migrationapi.ToUnstructured(st); err != nil {
		t.Fatal(err)
	}
	if _, err := client.UpdateStatus(t.Context(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// wantLines checks that out has a line matching each pattern (a regular expression).
func wantLines(t *testing.T, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		re := regexp.MustCompile(p)
		if !slices.ContainsFunc(strings.Split(out, "\n"), re.MatchString) {
			t.Errorf("no line matches %q in:\n%s", p, out)
		}
	}
}
