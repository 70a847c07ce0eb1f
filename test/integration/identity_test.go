package integration

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/wire"
	"github.com/spf13/pflag"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Every server holds an identity lease in kube-system named by its ID, held by
// "<id>_<uuid>", labelled and annotated as documented, renewed in the background. A
// restart keeps the lease's name and the number of leases; only the holder changes.
func TestIdentityLease(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, svLeases(3*time.Second, 200*time.Millisecond))
	leases := svClient(t, c.Servers[0].Config()).CoordinationV1().Leases("kube-system")
	selector := identity.LabelIdentity + "=" + identity.KubeAPIServer
	hostname, _ := os.Hostname()
	list := func() map[string]coordinationv1.Lease {
		t.Helper()
		l, err := leases.List(t.Context(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]coordinationv1.Lease{}
		for _, lease := range l.Items {
			out[lease.Name] = lease
		}
		return out
	}
	before := list()
	if len(before) != 2 {
		t.Fatalf("%d identity leases, want 2: %v", len(before), before)
	}
	for _, s := range c.Servers {
		l, ok := before[s.ServerID]
		if !ok {
			t.Fatalf("no lease named %s", s.ServerID)
		}
		holder := *l.Spec.HolderIdentity
		if !strings.HasPrefix(holder, s.ServerID+"_") || len(holder) != len(s.ServerID)+1+36 {
			t.Errorf("holder %q, want %s_<uuid>", holder, s.ServerID)
		}
		v := s.Compatibility.Versions
		if l.Labels[identity.LabelHostname] != hostname || *l.Spec.LeaseDurationSeconds != 3 || l.Spec.RenewTime == nil ||
			l.Labels[wire.LabelBinaryVersion] != v.Binary.String() ||
			l.Labels[wire.LabelEmulationVersion] != v.Emulation.String() ||
			l.Labels[wire.LabelMinCompatibilityVersion] != v.MinCompatibility.String() {
			t.Errorf("lease %s: labels %v, spec %+v", l.Name, l.Labels, l.Spec)
		}
	}

	// Renewed in the background.
	s0 := c.Servers[0]
	first := before[s0.ServerID].Spec.RenewTime.Time
	if _, ok := svPoll(t, 5*time.Second, func() (bool, error) {
		l, err := leases.Get(t.Context(), s0.ServerID, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime.After(first), err
	}); !ok {
		t.Error("the lease was not renewed")
	}

	// A restart: same name, same count, new holder.
	s0.Restart(t)
	after := list()
	if len(after) != 2 {
		t.Fatalf("%d identity leases after a restart, want 2", len(after))
	}
	l, ok := after[s0.ServerID]
	if !ok {
		t.Fatalf("the restarted server's lease %s is gone", s0.ServerID)
	}
	if *l.Spec.HolderIdentity == *before[s0.ServerID].Spec.HolderIdentity || !strings.HasPrefix(*l.Spec.HolderIdentity, s0.ServerID+"_") {
		t.Errorf("holder after a restart %q (before %q): want a new uuid", *l.Spec.HolderIdentity, *before[s0.ServerID].Spec.HolderIdentity)
	}
	other := c.Servers[1].ServerID
	if *after[other].Spec.HolderIdentity != *before[other].Spec.HolderIdentity {
		t.Errorf("the other server's holder changed")
	}
}

// The lease flags: defaults that let a dead server's entries go within about a
// minute, and validation.
func TestIdentityLeaseFlags(t *testing.T) {
	t.Parallel()
	o := controlplane.NewOptions()
	if o.IdentityLease.LeaseDuration > time.Minute || o.IdentityLease.RenewInterval >= o.IdentityLease.LeaseDuration {
		t.Errorf("defaults %v / %v", o.IdentityLease.LeaseDuration, o.IdentityLease.RenewInterval)
	}
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--identity-lease-duration=5s", "--identity-lease-renew-interval=500ms"}); err != nil {
		t.Fatal(err)
	}
	if o.IdentityLease.LeaseDuration != 5*time.Second || o.IdentityLease.RenewInterval != 500*time.Millisecond {
		t.Errorf("parsed %v / %v", o.IdentityLease.LeaseDuration, o.IdentityLease.RenewInterval)
	}
	for _, tc := range []struct {
		duration, renew time.Duration
		want            string
	}{
		{1500 * time.Millisecond, 100 * time.Millisecond, "--identity-lease-duration 1.5s must be a whole number of seconds"},
		{0, 0, "--identity-lease-duration 0s must be a whole number of seconds, at least 1s"},
		{2 * time.Second, 2 * time.Second, "--identity-lease-renew-interval 2s must be positive and shorter than --identity-lease-duration 2s"},
	} {
		o := controlplane.NewOptions()
		o.IdentityLease.LeaseDuration, o.IdentityLease.RenewInterval = tc.duration, tc.renew
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v/%v: %v, want %q", tc.duration, tc.renew, err, tc.want)
		}
	}
}
