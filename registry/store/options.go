package store

import (
	"fmt"
	"time"

	"github.com/concordproject/concord/registry/watchcache"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Options are the object store's flags: its watch caches (kube-apiserver's
// --watch-cache) and the bookmarks of idle watches.
type Options struct {
	// WatchCache answers lists and watches from per-resource caches in memory.
	WatchCache bool
	// WatchCacheMemoryLimit bounds their estimated memory, a quantity of bytes
	// ("4Gi"; "0": no bound).
	WatchCacheMemoryLimit string
	// BookmarkInterval is how often idle watches that asked for bookmarks get one.
	BookmarkInterval time.Duration
	// WatchFlushInterval is Store.WatchFlushInterval.
	WatchFlushInterval time.Duration
}

// maxWatchFlushInterval bounds --watch-flush-interval: the longest an event of a busy
// watch may wait for the ones after it.
const maxWatchFlushInterval = 100 * time.Millisecond

// NewOptions returns the defaults.
func NewOptions() Options {
	return Options{WatchCache: true, WatchCacheMemoryLimit: "4Gi", BookmarkInterval: 30 * time.Second,
		WatchFlushInterval: 10 * time.Millisecond}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.WatchCache, "watch-cache", o.WatchCache,
		"Answer lists and watches from a cache in memory per resource (started when the resource is first read, stopped when unused); false reads etcd every time.")
	fs.StringVar(&o.WatchCacheMemoryLimit, "watch-cache-memory-limit", o.WatchCacheMemoryLimit,
		"Bound on the watch caches' estimated memory, in bytes (a quantity: 4Gi, 512Mi; 0 for none). Past it the least recently used caches stop and their resources are read from etcd.")
	fs.DurationVar(&o.BookmarkInterval, "watch-bookmark-interval", o.BookmarkInterval, "How often idle watches that asked for bookmarks receive one.")
	_ = fs.MarkHidden("watch-bookmark-interval")
	fs.DurationVar(&o.WatchFlushInterval, "watch-flush-interval", o.WatchFlushInterval,
		"While a watch's changes keep coming, write them to its client at most this often (a change after a quiet interval goes out at once); 0 writes every change at once. At most 100ms.")
}

// Validate reports each invalid option as one line saying what is allowed.
func (o *Options) Validate() []error {
	var errs []error
	if _, err := o.memoryLimit(); err != nil {
		errs = append(errs, err)
	}
	if o.WatchFlushInterval < 0 || o.WatchFlushInterval > maxWatchFlushInterval {
		errs = append(errs, fmt.Errorf("--watch-flush-interval %s must be between 0 and %s", o.WatchFlushInterval, maxWatchFlushInterval))
	}
	return errs
}

func (o *Options) memoryLimit() (int64, error) {
	q, err := resource.ParseQuantity(o.WatchCacheMemoryLimit)
	if err != nil || q.Sign() < 0 {
		return 0, fmt.Errorf("--watch-cache-memory-limit %q must be a non-negative quantity of bytes, such as 4Gi or 512Mi (0: no limit)", o.WatchCacheMemoryLimit)
	}
	return q.Value(), nil
}

// Apply configures s as the options say, its caches' metrics registered with reg.
func (o *Options) Apply(s *Store, reg prometheus.Registerer) error {
	limit, err := o.memoryLimit()
	if err != nil {
		return err
	}
	if o.BookmarkInterval > 0 {
		s.BookmarkInterval = o.BookmarkInterval
	}
	s.WatchFlushInterval = o.WatchFlushInterval
	s.WatchCache = watchcache.Options{Disabled: !o.WatchCache, MemoryLimit: limit, Registerer: reg}
	return nil
}
