package migration

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/lifecycle"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

// DefinitionsCheck names the readyz check that fails while the storage-migration
// definitions cannot be installed.
const DefinitionsCheck = "storage-migration-definitions"

// FeatureConfig is what storage migration needs of the server that runs it
// in-process: whether it runs at all, a client of the server, where its metrics go,
// and the server's ID.
type FeatureConfig struct {
	// Disabled keeps the storage-migration controllers out of this server
	// (--disable-storage-migration).
	Disabled bool
	// Loopback is the server's own client configuration (Config.RESTConfig).
	Loopback *rest.Config
	// Metrics receives the controllers' metrics (Config.Metrics).
	Metrics prometheus.Registerer
	// ServerID starts the candidate's identity in the election, so that operators
	// (and the safety suite) see which server leads.
	ServerID string
}

// Feature is storage migration as one server runs it: Run, leader-elected among the
// servers (one of them triggers and runs migrations), and the readyz check
// DefinitionsCheck.
type Feature struct {
	cfg       FeatureConfig
	installed installState
}

// NewFeature builds it; nil, nil when cfg.Disabled (the server then runs no
// storage migration and has no DefinitionsCheck).
func NewFeature(cfg FeatureConfig) (*Feature, error) {
	if cfg.Disabled {
		return nil, nil
	}
	return &Feature{cfg: cfg}, nil
}

// Checks returns none: storage migration has no post-start hook, and its one check
// is for /readyz only (ReadyChecks).
func (f *Feature) Checks() []health.Checker { return nil }

// ReadyChecks are the readyz check DefinitionsCheck: not ready while storage
// migration cannot start (its definitions cannot be installed), which an operator
// must see and a restart would not mend. It is for /readyz alone, so it is not among
// Checks. None on a nil Feature.
func (f *Feature) ReadyChecks() []health.Checker {
	if f == nil {
		return nil
	}
	return []health.Checker{health.NamedCheck(DefinitionsCheck, f.installed.check)}
}

// Start starts Run as the component storage-migration, leader-elected among the
// servers, telling ReadyChecks the outcome of each attempt to install the definitions.
func (f *Feature) Start(ctx context.Context, g *lifecycle.Group) error {
	return g.Start(ctx, lifecycle.Component{Name: "storage-migration", Run: func(ctx context.Context) error {
		le := LeaderElection{Identity: f.cfg.ServerID + "_" + uuid.NewString()}
		return Run(ctx, Config{RESTConfig: f.cfg.Loopback, Metrics: f.cfg.Metrics, LeaderElection: le, Installed: f.installed.set})
	}})
}

// installState is the outcome of the last attempt to install the storage-migration
// definitions: its check fails, with the error, from a failed attempt until one
// succeeds (a first attempt under way does not count: a fresh server is not held
// back by it; a server that cannot install them is seen).
type installState struct {
	mu  sync.Mutex
	err error // nil once an attempt succeeds: the last one
}

func (s *installState) set(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *installState) check(*http.Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return fmt.Errorf("installing the storage-migration definitions: %w", s.err)
	}
	return nil
}
