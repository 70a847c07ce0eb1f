package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/cache"
	"github.com/concordproject/concord/registry/watchcache"
	"github.com/concordproject/concord/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Store gives objects of every resource their Kubernetes semantics on top of a
// storage.Store: generated metadata, optimistic concurrency, generation, finalizers,
// conversion to the requested version, selectors, paging and watches. It is safe for
// concurrent use and holds no per-resource state: every call names its Resource, so a
// resource redefined at run time (a CRD) takes effect on the next call.
//
// Every error it returns for a request is an *apierrors.StatusError naming the
// resource, ready to be sent to the client.
type Store struct {
	storage    *storage.Store
	namespaces *cache.Namespaces
	// BookmarkInterval is how often an idle watch that asked for bookmarks gets one.
	// Set it before the first watch.
	BookmarkInterval time.Duration
	// WatchFlushInterval paces the flushes of Streams (served watches): while changes
	// keep coming, a Stream flushes its Sink at most once per interval instead of
	// after each change, so that a busy watch writes its events to its client a few at
	// a time; a change after a quiet interval is flushed at once, and none waits
	// longer than the interval. Zero flushes after every change. Set it before the
	// first watch.
	WatchFlushInterval time.Duration
	// WatchCache configures the watch caches that answer lists and watches while Run
	// runs (its Observe and ProgressInterval are the store's). Set it before Run.
	WatchCache watchcache.Options
	now        func() time.Time

	caches    *watchcache.Caches
	recent    *cache.Recent
	rewritten *rewritten
}

// NewStore returns a Store over st. Creations of namespaced objects are checked against
// the namespaces stored in st (core/namespaces), as Kubernetes' NamespaceLifecycle
// admission does; call Run to keep the namespace cache warm.
func NewStore(st *storage.Store) *Store {
	s := &Store{storage: st, BookmarkInterval: 30 * time.Second, now: time.Now, recent: cache.NewRecent(), rewritten: newRewritten()}
	s.namespaces = cache.NewNamespaces(st)
	s.caches = watchcache.New(st)
	return s
}

// Storage returns the underlying raw store.
func (s *Store) Storage() *storage.Store { return s.storage }

// Run does the background work of the store until ctx is done, and returns nil once
// it has stopped: RunNamespaces and RunWatchCaches at once (the server runs them as
// two lifecycle components).
func (s *Store) Run(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- s.RunWatchCaches(ctx) }()
	err := s.RunNamespaces(ctx)
	return errors.Join(err, <-done)
}

// RunNamespaces keeps the namespace cache warm until ctx is done.
func (s *Store) RunNamespaces(ctx context.Context) error { return s.namespaces.Run(ctx) }

// RunWatchCaches serves the watch caches until ctx is done, and returns once every
// cache's goroutine has: without them every list reads etcd and every watch has an
// etcd watch of its own.
func (s *Store) RunWatchCaches(ctx context.Context) error {
	opts := s.WatchCache
	opts.ProgressInterval = s.BookmarkInterval
	opts.Observe = s.observe
	return s.caches.Run(ctx, opts)
}

// observe keeps what the watch caches see for updates to start from: an informer's
// controller writes back what its watch delivered (see recentObjects).
func (s *Store) observe(ev storage.Event) {
	switch ev.Type {
	case storage.Put:
		s.recent.Saw(ev.KV)
	case storage.Deleted:
		s.recent.Forget(ev.KV.Key)
	}
}

// ErrCachesLoading means a watch cache has not loaded its objects yet.
var ErrCachesLoading = errors.New("watch caches still loading")

// CachesLoaded returns nil once every running watch cache has loaded its objects,
// else ErrCachesLoading naming their key prefixes (the server's storage readiness).
func (s *Store) CachesLoaded() error {
	if loading := s.caches.Loading(); len(loading) > 0 {
		return fmt.Errorf("%w: %s", ErrCachesLoading, strings.Join(loading, ", "))
	}
	return nil
}

// CacheStats says what the store's watch caches hold.
func (s *Store) CacheStats() watchcache.Stats { return s.caches.Stats() }

// Ref names what a call of the store is about: objects of Resource, read and written
// in Version (a version name of the resource), in Namespace ("" for every namespace,
// and for cluster-scoped resources), and the object Name ("" for a collection).
type Ref struct {
	Resource  *registry.Resource
	Version   string
	Namespace string
	Name      string
}

// key is the storage key of the named object.
func (r Ref) key() string { return r.Resource.Key(r.Namespace, r.Name) }

// prefix is the storage prefix of the collection.
func (r Ref) prefix() string { return r.Resource.Prefix(r.Namespace) }

// decodeAs decodes a stored value and converts it to version.
func (s *Store) decodeAs(ctx context.Context, res *registry.Resource, kv *storage.KeyValue, version string) (*registry.Object, error) {
	obj, err := res.Decode(kv.Value, kv.Revision)
	if err != nil {
		return nil, s.internalError(res, err)
	}
	if err := res.Convert(ctx, []*registry.Object{obj}, version); err != nil {
		return nil, s.conversionError(res, err)
	}
	res.Schema(version).DefaultStored(obj.Object)
	return obj, nil
}

func (s *Store) internalError(res *registry.Resource, err error) error {
	return apierrors.NewInternalError(fmt.Errorf("%s: %w", res.GroupResource(), err))
}

func (s *Store) conversionError(res *registry.Resource, err error) error {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return err
	}
	return apierrors.NewInternalError(fmt.Errorf("conversion of %s failed: %w", res.GroupResource(), err))
}

// storageError turns a storage error into the Status a client should see.
func (s *Store) storageError(res *registry.Resource, name string, err error) error {
	gr := res.GroupResource()
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrAlreadyExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, storage.ErrCompacted):
		return apierrors.NewResourceExpired(fmt.Sprintf("the resourceVersion requested for %s has been compacted; list again without it", gr))
	case errors.Is(err, context.DeadlineExceeded):
		return apierrors.NewTimeoutError(fmt.Sprintf("etcd did not answer in time for %s %q", gr, name), 1)
	case errors.Is(err, context.Canceled):
		return apierrors.NewTimeoutError("request canceled", 0)
	case errors.Is(err, storage.ErrTooLarge):
		return tooLarge(gr, name, err)
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return err
	}
	return apierrors.NewInternalError(fmt.Errorf("%s %q: %w", gr, name, err))
}

// tooLarge is the 413 of an object too large to store.
func tooLarge(gr fmt.Stringer, name string, err error) error {
	var tle *storage.TooLargeError
	if errors.As(err, &tle) && tle.Size > 0 {
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
			"%s %q is %d bytes as stored, over the limit of %d bytes etcd takes in one write", gr, name, tle.Size, tle.Limit))
	}
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
		"%s %q is too large for etcd to store in one write (at most %d bytes)", gr, name, storage.MaxRequestBytes))
}

// parseRV parses a non-empty resourceVersion parameter.
func parseRV(gr fmt.Stringer, rv string) (int64, error) {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q for %s: must be a non-negative integer", rv, gr))
	}
	return n, nil
}

// checkNotTooNew fails with 504 ResourceVersionTooLarge if current, a revision read
// from etcd, is older than minRV. Every read of etcd is linearizable, so a revision a
// client saw anywhere (through another server too) is never newer than what a later
// read returns: minRV > current means minRV does not exist yet, and nothing is gained
// by waiting.
func checkNotTooNew(minRV, current int64) error {
	if minRV <= current {
		return nil
	}
	return tooLargeResourceVersion(minRV, current)
}

// tooLargeResourceVersion is the 504 a client gets when it asks for a resourceVersion
// the store has not reached; client-go recognises it by its cause type.
func tooLargeResourceVersion(want, have int64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("resourceVersion %d is newer than the storage's current %d", want, have), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "resourceVersion is newer than the storage's current revision",
	}}
	return err
}

// nowTime returns the current time at the precision Kubernetes stores (seconds).
func (s *Store) nowTime() metav1.Time { return metav1.NewTime(s.now().UTC().Truncate(time.Second)) }

func fieldErrs(path string, value interface{}, msg string) field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath(path), value, msg)}
}
