package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/upgradecheck"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/storageversion/publisher"
	"github.com/concordproject/concord/versionskew"
	"github.com/concordproject/concord/wire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// The servers' version skew controller reports what the identity leases announce: two
// servers of releases N and N-1 are within the allowance; an aggregated server
// (publishing through the real library) that emulates N-3 puts the control plane
// outside it, with a Warning Event on the leases, the gauge on the leading server and
// the condition False; once it stops and its lease is collected, the report is within
// the allowance again and the servers' leases get a Normal Event.
func TestVersionSkewReport(t *testing.T) {
	t.Parallel()
	older, newer := releases(t)
	c := harness.Start(t, 2, harness.WithServerOptions(func(i int, o *controlplane.Options) {
		if i == 1 {
			o.Compatibility.BinaryVersion = older
		}
	}))
	dyn := c.Servers[0].Dynamic(t)
	report := waitSkew(t, dyn, "two servers of releases N and N-1, within the allowance", func(r *versionskew.VersionSkew) bool {
		cond := meta.FindStatusCondition(r.Status.Conditions, versionskew.ConditionWithinAllowance)
		return len(r.Status.Components) == 2 && cond != nil && cond.Status == metav1.ConditionTrue
	})
	emulations := map[string]string{}
	for _, comp := range report.Status.Components {
		emulations[comp.Name] = comp.EmulationVersion
		if comp.Kind != wire.KindKubeAPIServer || comp.Role != versionskew.APIServer || !comp.WithinAllowance {
			t.Errorf("component %+v", comp)
		}
	}
	if emulations[c.Servers[0].ServerID] != newer || emulations[c.Servers[1].ServerID] != older {
		t.Fatalf("emulation versions %v, want %s: %s and %s: %s", emulations, c.Servers[0].ServerID, newer, c.Servers[1].ServerID, older)
	}

	// An aggregated server three releases behind.
	admin := c.Servers[0].Clientset(t)
	v := version.MustParse(newer).SubtractMinor(3)
	p, err := publisher.New(publisher.Config{Client: admin, ServerID: "wardle-old", Kind: "wardle-apiserver",
		Versions:      wire.ComponentVersions{Binary: v, Emulation: v, MinCompatibility: v},
		LeaseDuration: 3 * time.Second, RenewInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	report = waitSkew(t, dyn, "the old aggregated server outside the allowance", func(r *versionskew.VersionSkew) bool {
		cond := meta.FindStatusCondition(r.Status.Conditions, versionskew.ConditionWithinAllowance)
		return len(r.Status.Components) == 3 && cond != nil && cond.Status == metav1.ConditionFalse
	})
	cond := meta.FindStatusCondition(report.Status.Conditions, versionskew.ConditionWithinAllowance)
	if cond.Reason != versionskew.ReasonOutOfAllowance || !strings.Contains(cond.Message, "wardle-apiserver wardle-old") ||
		!strings.Contains(cond.Message, "more than one minor above") {
		t.Errorf("condition %+v", cond)
	}
	for _, comp := range report.Status.Components {
		if comp.WithinAllowance { // every server is more than one minor above the old one
			t.Errorf("component %+v within the allowance", comp)
		}
	}
	waitEvent(t, admin, "wardle-old", versionskew.EventOutOfAllowance)
	waitFor(t, "the leading server's gauge for wardle-old", func() (bool, error) {
		return leaderGauges(t, c) == 1, nil
	})

	stop()
	waitSkew(t, dyn, "the servers alone, within the allowance again", func(r *versionskew.VersionSkew) bool {
		cond := meta.FindStatusCondition(r.Status.Conditions, versionskew.ConditionWithinAllowance)
		return len(r.Status.Components) == 2 && cond != nil && cond.Status == metav1.ConditionTrue &&
			r.Status.Components[0].WithinAllowance && r.Status.Components[1].WithinAllowance
	})
	// A component leaves the report when the elected collector deletes its expired
	// lease, not when some server's clock says it expired: the lease is gone by now.
	if _, err := admin.CoordinationV1().Leases(metav1.NamespaceSystem).Get(t.Context(), "wardle-old", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("wardle-old left the report while its lease exists (get: %v)", err)
	}
	waitEvent(t, admin, c.Servers[1].ServerID, versionskew.EventWithinAllowance)
	if n := leaderGauges(t, c); n != 0 {
		t.Errorf("%d out-of-allowance series once within the allowance, want 0", n)
	}
}

// waitSkew waits until the VersionSkew report satisfies ok, and returns it.
func waitSkew(t *testing.T, dyn dynamic.Interface, what string, ok func(*versionskew.VersionSkew) bool) *versionskew.VersionSkew {
	t.Helper()
	var out *versionskew.VersionSkew
	waitFor(t, what, func() (bool, error) {
		u, err := dyn.Resource(versionskew.GroupVersion.WithResource(versionskew.GroupResource.Resource)).Get(t.Context(), versionskew.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not written yet
		}
		out = &versionskew.VersionSkew{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
			return false, err
		}
		return ok(out), nil
	})
	return out
}

// waitEvent waits for an Event of reason on the identity lease name.
func waitEvent(t *testing.T, cs kubernetes.Interface, name, reason string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("Event %s on lease %s", reason, name), func() (bool, error) {
		list, err := cs.EventsV1().Events(metav1.NamespaceSystem).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Lease" && e.Regarding.Name == name && e.Reason == reason {
				return true, nil
			}
		}
		return false, nil
	})
}

// leaderGauges counts the concord_version_skew_out_of_allowance series of every
// server (only the leading one exports them).
func leaderGauges(t *testing.T, c *harness.Cluster) int {
	t.Helper()
	n := 0
	for _, s := range c.Servers {
		_, body := do(t, s.Config(), http.MethodGet, "/metrics", nil)
		for line := range strings.SplitSeq(body, "\n") {
			if strings.HasPrefix(line, "concord_version_skew_out_of_allowance{") && strings.Contains(line, `component="wardle-old"`) {
				n++
			}
		}
	}
	return n
}

// A skip-level upgrade's first step: servers of one build emulating N-3 are within the
// allowance (each reads what the other writes: its own binary does), and upgrade-check
// finds the control plane within it now.
func TestSkipLevelWithinAllowance(t *testing.T) {
	t.Parallel()
	_, newer := releases(t)
	oldest := version.MustParse(newer).SubtractMinor(3)
	emulated := fmt.Sprintf("%d.%d", oldest.Major(), oldest.Minor())
	c := harness.Start(t, 2, harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		o.Compatibility.EmulationVersion = []string{emulated}
	}))
	waitSkew(t, c.Servers[0].Dynamic(t), "two servers emulating N-3, within the allowance", func(r *versionskew.VersionSkew) bool {
		cond := meta.FindStatusCondition(r.Status.Conditions, versionskew.ConditionWithinAllowance)
		return len(r.Status.Components) == 2 && cond != nil && cond.Status == metav1.ConditionTrue &&
			r.Status.Components[0].WithinAllowance && r.Status.Components[1].WithinAllowance
	})
	var out bytes.Buffer
	cmd := upgradecheck.NewCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--kubeconfig", c.Servers[0].KubeconfigPath, "--to-version", newer, "--emulation-version", version.MustParse(newer).SubtractMinor(2).String()})
	if err := cmd.ExecuteContext(t.Context()); err != nil && strings.Contains(err.Error(), "version skew") {
		t.Errorf("upgrade-check calls the skip-level step outside the allowance: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "WithinAllowance=True") {
		t.Errorf("upgrade-check does not find the control plane within the allowance:\n%s", out.String())
	}
}
