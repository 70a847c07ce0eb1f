package storageversion

import (
	"fmt"
	"net/http"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/server/request"
	"github.com/concordproject/concord/server/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
//  5. leases in kube-system (identity leases, leader election);
//
// and every resource it does not track (aggregated or non-persisted ones). Writes to a
// custom resource whose storage version is changing wait for the change, up to five
// seconds. Subresources count as their resource; deletes are writes.
func (m *Manager) Filter(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, ok := request.InfoFrom(r.Context())
		if !ok || !info.IsResourceRequest || exempt(r, info) {
			next.ServeHTTP(w, r)
			return
		}
		gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
		t := m.lookup(gr)
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
func exempt(r *http.Request, info *request.Info) bool {
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
		return true
	}
	return false
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
