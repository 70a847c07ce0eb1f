package publisher

import (
	"encoding/json"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Classify says which resource a request concerns and whether it writes it; ok is
// false for requests that concern no resource (discovery, health).
type Classify func(r *http.Request) (gr schema.GroupResource, write, ok bool)

// Filter is the write barrier: a write to a resource the server persists is answered
// 503, with a Status and Retry-After as Concord's servers answer, until the server's
// entry for it is published. Reads and everything else pass.
func (p *Publisher) Filter(classify Classify, next http.Handler) http.Handler {
	tracked := map[schema.GroupResource]bool{}
	for _, r := range p.cfg.Resources {
		tracked[r.GroupResource] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gr, write, ok := classify(r)
		if !ok || !write || !tracked[gr] || p.Published(gr) {
			next.ServeHTTP(w, r)
			return
		}
		err := apierrors.NewServiceUnavailable(fmt.Sprintf("wait for storage version registration to complete for resource: %v", gr))
		err.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
		status := err.ErrStatus
		status.Kind, status.APIVersion = "Status", "v1"
		body, _ := json.Marshal(&status)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write(body)
	})
}
