package registry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/concordproject/concord/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	namespaces *namespaceCache
	// BookmarkInterval is how often an idle watch that asked for bookmarks gets one.
	// Set it before the first watch.
	BookmarkInterval time.Duration
	now              func() time.Time

	hubsMu sync.Mutex
	hubs   map[string]*hub // shared watches, by resource prefix

	recent *recentObjects
}

// NewStore returns a Store over st. Creations of namespaced objects are checked against
// the namespaces stored in st (core/namespaces), as Kubernetes' NamespaceLifecycle
// admission does; call Start to keep the namespace cache warm.
func NewStore(st *storage.Store) *Store {
	s := &Store{storage: st, BookmarkInterval: 30 * time.Second, now: time.Now, hubs: map[string]*hub{}, recent: newRecentObjects()}
	s.namespaces = newNamespaceCache(st)
	return s
}

// Storage returns the underlying raw store.
func (s *Store) Storage() *storage.Store { return s.storage }

// Start runs the background work of the store (the namespace cache) until ctx is done.
func (s *Store) Start(ctx context.Context) { go s.namespaces.run(ctx) }

// Object is a convenience alias used throughout the store's API.
type Object = unstructured.Unstructured

// decodeAs decodes a stored value and converts it to version.
func (s *Store) decodeAs(ctx context.Context, res *Resource, kv *storage.KeyValue, version string) (*Object, error) {
	obj, err := res.Decode(kv.Value, kv.Revision)
	if err != nil {
		return nil, s.internalError(res, err)
	}
	if err := res.Convert(ctx, []*Object{obj}, version); err != nil {
		return nil, s.conversionError(res, err)
	}
	res.Schema(version).DefaultStored(obj.Object)
	return obj, nil
}

func (s *Store) internalError(res *Resource, err error) error {
	return apierrors.NewInternalError(fmt.Errorf("%s: %w", res.GroupResource(), err))
}

func (s *Store) conversionError(res *Resource, err error) error {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return err
	}
	return apierrors.NewInternalError(fmt.Errorf("conversion of %s failed: %w", res.GroupResource(), err))
}

// storageError turns a storage error into the Status a client should see.
func (s *Store) storageError(res *Resource, name string, err error) error {
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
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		return err
	}
	return apierrors.NewInternalError(fmt.Errorf("%s %q: %w", gr, name, err))
}

// parseRV parses a non-empty resourceVersion parameter.
func parseRV(gr fmt.Stringer, rv string) (int64, error) {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q for %s: must be a non-negative integer", rv, gr))
	}
	return n, nil
}

// checkNotTooNew fails with 504 ResourceVersionTooLarge if the store has not reached
// min yet.
func (s *Store) checkNotTooNew(ctx context.Context, res *Resource, min, current int64) error {
	if min <= current {
		return nil
	}
	// The store may lag a write seen elsewhere by a moment; re-read once.
	time.Sleep(50 * time.Millisecond)
	cur, err := s.storage.CurrentRevision(ctx)
	if err != nil {
		return s.storageError(res, "", err)
	}
	if min <= cur {
		return nil
	}
	return tooLargeResourceVersion(min, cur)
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
