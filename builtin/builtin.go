package builtin

import (
	"errors"
	"fmt"
	"time"

	"github.com/concordproject/concord/namespace"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/storageversion"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Options tune the behaviour of built-in resources.
type Options struct {
	// EventTTL is how long Events live after their last write (--event-ttl).
	EventTTL time.Duration
}

// ErrMissing means the API catalog lacks a resource every server needs.
var ErrMissing = errors.New("the API catalog does not define a resource every server needs")

// required are the resources a server cannot run without: namespaces hold every
// namespaced object, leases the servers' identities and elections.
var required = []schema.GroupResource{namespace.GroupResource, leasesGR}

// configurers names, for each built-in resource with behaviour, what gives it.
func configurers(opts Options) map[schema.GroupResource]func(*registry.Resource) error {
	return map[schema.GroupResource]func(*registry.Resource) error{
		namespace.GroupResource:      namespace.Configure,
		storageversion.GroupResource: storageversion.Configure,
		storageVersionMigrationsGR:   configureStorageVersionMigrations,
		leasesGR:                     configureLeases,
		coreEventsGR:                 func(r *registry.Resource) error { return configureEvents(r, coreEventFields, opts.EventTTL) },
		eventsGR:                     func(r *registry.Resource) error { return configureEvents(r, eventsEventFields, opts.EventTTL) },
	}
}

// Configure gives each of resources (the catalog's, not yet in a registry) the
// behaviour its owner defines, and checks that the resources every server needs are
// there.
func Configure(resources []*registry.Resource, opts Options) error {
	table := configurers(opts)
	have := map[schema.GroupResource]bool{}
	for _, r := range resources {
		gr := r.GroupResource()
		have[gr] = true
		if configure, ok := table[gr]; ok {
			if err := configure(r); err != nil {
				return fmt.Errorf("%s: %w", gr, err)
			}
		}
	}
	for _, gr := range required {
		if !have[gr] {
			return fmt.Errorf("%w: %s", ErrMissing, gr)
		}
	}
	return nil
}
