package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinel errors. Every error returned by a Store either is one of these (tested with
// errors.Is) or wraps an etcd client error.
var (
	// ErrNotFound: the key does not exist (at the requested revision).
	ErrNotFound = errors.New("key not found")
	// ErrAlreadyExists: Create found the key present.
	ErrAlreadyExists = errors.New("key already exists")
	// ErrConflict: the key is not at the revision the caller expected.
	ErrConflict = errors.New("key changed since it was read")
	// ErrCompacted: the requested revision has been compacted away.
	ErrCompacted = errors.New("revision compacted")
	// ErrFutureRevision: the requested revision is newer than the store's current one.
	ErrFutureRevision = errors.New("revision is in the future")
	// ErrInvalidContinue: a continue token could not be decoded or does not belong to
	// the listed prefix.
	ErrInvalidContinue = errors.New("invalid continue token")
	// ErrTooLarge: a write is larger than etcd takes in one request (TooLargeError).
	ErrTooLarge = errors.New("write too large for etcd")
)

// MaxRequestBytes is the largest request Concord sends etcd: etcd's own default
// --max-request-bytes (1.5 MiB), which the embedded etcd keeps. A write whose key and
// value would make a larger request is refused before it is sent (TooLargeError),
// rather than by etcd's server or its client's 2 MiB message limit.
const MaxRequestBytes = 3 << 19

// requestOverhead bounds what a conditional write adds to its key and value in the
// request etcd measures: the key appears in the compare, the put and the read of the
// current value on a conflict, with the header and encoding around them.
func requestOverhead(key string) int { return 3*len(key) + 512 }

// TooLargeError is returned by writes whose request would be over MaxRequestBytes, and
// when etcd refuses one as too large. It matches ErrTooLarge with errors.Is.
type TooLargeError struct {
	Key string
	// Size is the value's size in bytes, as sealed for etcd; 0 if etcd refused it
	// without saying.
	Size  int
	Limit int
}

func (e *TooLargeError) Error() string {
	if e.Size == 0 {
		return fmt.Sprintf("%s: %v (etcd refused it)", e.Key, ErrTooLarge)
	}
	return fmt.Sprintf("%s: %v: %d bytes, over the %d bytes of a request", e.Key, ErrTooLarge, e.Size, e.Limit)
}

// Is makes a TooLargeError match ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// checkSize is a TooLargeError if writing value at key would be too large a request.
func checkSize(key string, value []byte) error {
	if len(value)+requestOverhead(key) > MaxRequestBytes {
		return &TooLargeError{Key: key, Size: len(value), Limit: MaxRequestBytes - requestOverhead(key)}
	}
	return nil
}

// ConflictError is returned by Update and Delete when the key moved. It matches
// ErrConflict (or ErrNotFound when Current is nil) with errors.Is.
type ConflictError struct {
	Key string
	// Current is the key's current value, or nil if the key no longer exists.
	Current *KeyValue
}

func (e *ConflictError) Error() string {
	if e.Current == nil {
		return fmt.Sprintf("%s: %v", e.Key, ErrNotFound)
	}
	return fmt.Sprintf("%s: %v (now at revision %d)", e.Key, ErrConflict, e.Current.Revision)
}

// Is makes a ConflictError match ErrConflict, or ErrNotFound if the key is gone.
func (e *ConflictError) Is(target error) bool {
	if e.Current == nil {
		return target == ErrNotFound
	}
	return target == ErrConflict
}

// KeyValue is one stored value and its revisions.
type KeyValue struct {
	Key   string
	Value []byte
	// Revision is the etcd mod revision: the resourceVersion of the object.
	Revision int64
	// CreateRevision is the revision at which the key was created.
	CreateRevision int64
	// Stale reports that the value is stored sealed otherwise than this store seals
	// writes (with an older encryption key, or in plaintext): written back unchanged,
	// it changes in etcd. A storage migration rewrites stale values.
	Stale bool
}

// Store reads and writes keys under a prefix of one etcd cluster. It is safe for
// concurrent use. Keys passed to its methods are relative to the prefix.
type Store struct {
	client  *clientv3.Client
	prefix  string
	metrics *Metrics
	leases  *leases
	// transformers, if set, seal and open values (WithTransformers).
	transformers Transformers
	// noRangeStream is set once etcd answered that it serves no range streams:
	// uncounted pages are read as counted ones from then on.
	noRangeStream atomic.Bool
}

// New returns a Store over client whose keys all live under prefix (e.g. "/registry").
// The prefix is normalised to have no trailing slash.
func New(client *clientv3.Client, prefix string) *Store {
	return &Store{client: client, prefix: strings.TrimSuffix(prefix, "/"), leases: &leases{client: client}}
}

// Client returns the underlying etcd client.
func (s *Store) Client() *clientv3.Client { return s.client }

// Prefix returns the key prefix of this store.
func (s *Store) Prefix() string { return s.prefix }

func (s *Store) abs(key string) string { return s.prefix + "/" + strings.TrimPrefix(key, "/") }

func (s *Store) rel(key []byte) string { return strings.TrimPrefix(string(key), s.prefix+"/") }

// CurrentRevision returns the newest revision of the etcd cluster (a linearizable read).
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, s.abs("\x00concord-revision-probe"), clientv3.WithCountOnly())
	if err != nil {
		return 0, translate(err)
	}
	return resp.Header.Revision, nil
}

// CheckRevision reports whether etcd can still be read at revision rev: nil, or an
// error matching ErrCompacted (or ErrFutureRevision). It reads no data.
func (s *Store) CheckRevision(ctx context.Context, rev int64) error {
	_, err := s.client.Get(ctx, s.abs("\x00concord-revision-probe"), clientv3.WithCountOnly(), clientv3.WithRev(rev))
	return translate(err)
}

// translate maps etcd client errors onto the sentinels.
func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%w: %w", ErrCompacted, err)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%w: %w", ErrFutureRevision, err)
	case errors.Is(err, rpctypes.ErrRequestTooLarge) || isMessageTooLarge(err):
		// An etcd whose --max-request-bytes is below Concord's, or a request the
		// client's message limit stopped.
		return fmt.Errorf("%w: %w", &TooLargeError{Limit: MaxRequestBytes}, err)
	}
	return err
}

// isMessageTooLarge reports whether err is the gRPC client refusing to send a message
// over its size limit.
func isMessageTooLarge(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "larger than max")
}
