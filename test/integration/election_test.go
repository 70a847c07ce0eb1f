package integration

import (
	"slices"
	"strings"
	"testing"

	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/identity"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The servers' elected controllers share one election: kube-system holds each
// server's identity lease and one Lease for every controller (concord-controllers,
// held by one server), and when its holder stops the other server takes the Lease
// and runs the controllers (here: the quotas' status of a quota created after).
func TestServersShareOneElection(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2)
	cs := c.Servers[0].Clientset(t)
	holder := func(cs kubernetes.Interface) (string, error) {
		lease, err := cs.CoordinationV1().Leases(identity.Namespace).Get(t.Context(), feature.ElectionLease, metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return "", err
		}
		return *lease.Spec.HolderIdentity, nil
	}
	leader := -1
	waitFor(t, "a server to hold the controllers' Lease", func() (bool, error) {
		h, err := holder(cs)
		leader = slices.IndexFunc(c.Servers, func(s *harness.Server) bool { return strings.HasPrefix(h, s.ServerID+"_") })
		return leader >= 0, err
	})
	leases, err := cs.CoordinationV1().Leases(identity.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range leases.Items {
		names = append(names, l.Name)
	}
	want := []string{feature.ElectionLease}
	for _, s := range c.Servers {
		want = append(want, s.ServerID)
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("Leases in kube-system: %v, want the identity leases and %s alone: %v", names, feature.ElectionLease, want)
	}

	c.Servers[leader].Stop(t)
	other := c.Servers[1-leader]
	ocs := other.Clientset(t)
	waitFor(t, "the other server to hold the controllers' Lease", func() (bool, error) {
		h, err := holder(ocs)
		return strings.HasPrefix(h, other.ServerID+"_"), err
	})
	e := newQuotaEnv(t, other, "one-election", "counted", map[string]string{"configmaps": "10"})
	if _, err := ocs.CoreV1().ConfigMaps(e.ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitUsed(map[string]string{"configmaps": "1"})
}
