package storage

import (
	"context"
	"net/http"
	"time"

	"github.com/concordproject/concord/health"
)

// healthCheckTimeout bounds one HealthCheck read.
const healthCheckTimeout = 2 * time.Second

// HealthCheck is a server's "etcd" check (kube-apiserver's name): a linearizable read
// of the current revision, which fails while etcd has no quorum or cannot be reached.
func (s *Store) HealthCheck() health.Checker {
	return health.NamedCheck("etcd", func(r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), healthCheckTimeout)
		defer cancel()
		_, err := s.CurrentRevision(ctx)
		return err
	})
}
