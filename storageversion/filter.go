package storageversion

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/rbac/bootstrap"
	"github.com/concordproject/concord/request"
	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
)

// customWait bounds how long a custom resource write waits at a closed gate (its
// storage version changing) before it gets 503.
const customWait = 5 * time.Second

// Filter is the write barrier: a server filter (it needs the request info and user of
// the handler chain) that refuses, with 503 ServiceUnavailable and Retry-After, every
// write to a resource this server tracks until the server's entry for that resource is
// written. It lets through, as KEP-2339 has it:
//
//  1. requests that are not resource requests;
//  2. get, list and watch;
//  3. storageversions of internal.apiserver.k8s.io (who may write them is the
//     resource's business: only the servers' loopback user);
//  4. the creation of namespaces by the server itself;
//  5. writes to leases in kube-system by the identities that hold leases there: the
//     servers' loopback identity (their leader elections), the aggregated servers an
//     APIService names as StorageVersion publishers (their identity leases), Concord's
//     controller manager (system:concord:controller-manager: its identity lease and
//     election), and Kubernetes' controller manager and scheduler (their elections).
//     Identity leases keep StorageVersion entries alive and elections run the
//     controllers that maintain them, so they must be renewed while a barrier is
//     closed, or the barrier's own machinery would stall. Anyone else's writes to
//     those leases, an administrator's included, wait like every other write:
//     kube-apiserver lets every user through, the KEP exempts these leases for
//     identity and election only;
//
// and every resource it does not track (aggregated or non-persisted ones). Writes to a
// custom resource whose storage version is changing wait for the change, up to five
// seconds. Subresources count as their resource; deletes are writes. A resource that
// shares another's storage (events.k8s.io Events) waits at the owner's gate.
func (m *Manager) Filter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := request.InfoFrom(r.Context())
		if !ok || !info.IsResourceRequest || m.exempt(r, info) {
			next.ServeHTTP(w, r)
			return
		}
		gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
		t := m.gateHolder(gr)
		if t == nil {
			next.ServeHTTP(w, r)
			return
		}
		if m.cfg.LeaseValid != nil && !m.cfg.LeaseValid(time.Now()) {
			m.reject(w, r, gr, ErrLeaseLapsed)
			return
		}
		admitted, opened, reason := t.gate.enter()
		if !admitted && t.custom {
			timer := time.NewTimer(customWait)
			select {
			case <-opened:
				admitted, _, reason = t.gate.enter()
			case <-timer.C:
			case <-r.Context().Done():
			}
			timer.Stop()
		}
		if !admitted {
			m.reject(w, r, gr, reason)
			return
		}
		defer t.gate.leave()
		next.ServeHTTP(w, r)
	})
}

// exempt reports whether a resource request passes the barrier whatever the state of
// its resource.
func (m *Manager) exempt(r *http.Request, info *request.Info) bool {
	switch info.Verb {
	case "get", "list", "watch":
		return true
	}
	switch {
	case info.APIGroup == GroupResource.Group && info.Resource == GroupResource.Resource:
		return true
	case info.APIGroup == "" && info.Resource == "namespaces" && info.Verb == "create" && info.Subresource == "":
		u, _ := auth.UserFrom(r.Context())
		return u.Name == auth.LoopbackUser
	case info.APIGroup == identity.GroupResource.Group && info.Resource == identity.GroupResource.Resource && info.Namespace == identity.Namespace:
		return m.leaseHolder(r.Context())
	}
	return false
}

// leaseHolders are the users that hold leases in kube-system under a name of their
// own: Concord's controller manager (its identity lease and its election), and
// Kubernetes' controller manager and scheduler (their elections), should they run
// against Concord.
var leaseHolders = []string{bootstrap.ControllerManagerUser, user.KubeControllerManager, user.KubeScheduler}

// leaseHolder reports whether the user of ctx holds identity or leader-election leases
// in kube-system, and so passes the barrier to write them (rule 5 of Filter): the
// servers' loopback identity (their elections; their identity leases are written
// through the store, behind no filter), the identities that may publish StorageVersion
// entries (the aggregated servers an APIService names, which keep an identity lease
// for their entries: the storageversions resource's own rule decides, so that the
// barrier and the API agree on who they are), and the components of leaseHolders.
func (m *Manager) leaseHolder(ctx context.Context) bool {
	u, ok := auth.UserFrom(ctx)
	if !ok {
		return false
	}
	if u.Name == auth.LoopbackUser || slices.Contains(leaseHolders, u.Name) {
		return true
	}
	return m.publishes(ctx)
}

// publishes reports whether the user of ctx may publish StorageVersion entries, as the
// storageversions resource's Writable hook answers for a creation (ConfigureWith).
func (m *Manager) publishes(ctx context.Context) bool {
	res := m.cfg.Registry.Get(GroupResource)
	if res == nil || res.Hooks == nil || res.Hooks.Writable == nil {
		return false
	}
	create := &request.Info{IsResourceRequest: true, Verb: "create", APIGroup: GroupResource.Group,
		APIVersion: version, Resource: GroupResource.Resource}
	return res.Hooks.Writable(request.WithInfo(ctx, create)) == nil
}

// reject answers 503 with Kubernetes' message, the last error seen for the resource
// ("<nil>" while its first registration is under way) and Retry-After, which client-go
// honours by retrying.
func (m *Manager) reject(w http.ResponseWriter, r *http.Request, gr schema.GroupResource, reason error) {
	m.metrics.rejections.WithLabelValues(gr.String()).Inc()
	err := apierrors.NewServiceUnavailable(
		fmt.Sprintf("wait for storage version registration to complete for resource: %v, last seen error: %v", gr, reason))
	err.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
	respond.Error(w, r, err)
}
