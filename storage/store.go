package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
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
)

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
	}
	return err
}
