package identity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

// ErrBelowFleet means that a server's release is below the minimum compatibility
// version of API servers that share its etcd: they may have stored what it would
// lose.
var ErrBelowFleet = errors.New("release below the minimum compatibility version of the servers sharing this etcd")

// CheckJoin refuses a server of release binary (major.minor) to join the API servers
// whose identity leases are in st, when any of them runs with a minimum compatibility
// version above binary. Such a server may have stored data that only that release and
// later read: fields and enum values the older release does not know, which it would
// drop from every object it writes, and versions it cannot decode. Every Concord
// server's lease counts, expired or not, this server's own from an earlier run too:
// a lease stays until a running server collects it, and what its server wrote stays
// in etcd after it stopped. CheckJoin only reads; call it before the server writes
// anything.
func CheckJoin(ctx context.Context, reg *registry.Registry, st *store.Store, binary *version.Version) error {
	res := reg.Get(GroupResource)
	if res == nil {
		return nil // nothing to read leases with: the server keeps none either
	}
	list, err := st.List(ctx, store.Ref{Resource: res, Version: leaseVersion, Namespace: Namespace},
		metav1.ListOptions{LabelSelector: LabelIdentity + "=" + KubeAPIServer})
	if err != nil {
		return fmt.Errorf("reading the identity leases of the servers sharing this etcd: %w", err)
	}
	var above []string
	highest := binary
	for i := range list.Items {
		lease := &list.Items[i]
		v, ok, err := wire.ComponentVersionsOf(lease.GetLabels())
		if err != nil || !ok || !v.MinCompatibility.GreaterThan(binary) {
			continue // unlabelled leases carry no promise to keep
		}
		above = append(above, fmt.Sprintf("%s (release %s, --min-compatibility-version=%s)", lease.GetName(), v.Binary, v.MinCompatibility))
		if v.MinCompatibility.GreaterThan(highest) {
			highest = v.MinCompatibility
		}
	}
	if len(above) == 0 {
		return nil
	}
	slices.Sort(above)
	return fmt.Errorf("%w: release %s cannot join %s: they may have stored fields, enum values or versions that only release %s and later read, which this server would drop or fail to read; restart them with --min-compatibility-version=%s first and check the move with `concord upgrade-check --to-version %s` (a lease of a server gone for good can be deleted)",
		ErrBelowFleet, binary, strings.Join(above, ", "), highest, binary, binary)
}
