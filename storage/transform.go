package storage

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"k8s.io/apiserver/pkg/storage/value"
)

// ErrUnreadable means that a stored value cannot be opened (it is sealed with an encryption key
// this server does not have, or its seal is broken).
var ErrUnreadable = errors.New("stored value cannot be read")

// Transformers returns the transformer of the values under a key (relative to the
// store), or nil to store them as they are.
type Transformers func(key string) value.Transformer

// WithTransformers makes the store seal every value it writes and open every value it
// reads with the transformer t gives for its key (encryption at rest), the key's
// absolute path authenticated with it. Values opened with another transformer than
// the one that seals writes are marked Stale.
func (s *Store) WithTransformers(t Transformers) *Store {
	s.transformers = t
	return s
}

// seal transforms a value on its way to etcd; key is absolute.
func (s *Store) seal(ctx context.Context, key string, v []byte) ([]byte, error) {
	if s.transformers == nil {
		return v, nil
	}
	t := s.transformers(s.rel([]byte(key)))
	if t == nil {
		return v, nil
	}
	out, err := t.TransformToStorage(ctx, v, value.DefaultContext(key))
	if err != nil {
		return nil, fmt.Errorf("%s: sealing the value: %w", s.rel([]byte(key)), err)
	}
	return out, nil
}

// borrowed is v as a string without a copy, for clientv3.OpPut, which copies its value
// into the request itself: the caller must not change v afterwards (a value to write
// never is).
func borrowed(v []byte) string {
	return unsafe.String(unsafe.SliceData(v), len(v))
}

// kv is what etcd returned for one key, opened.
func (s *Store) kv(ctx context.Context, k *mvccKV) (*KeyValue, error) {
	kv := &KeyValue{Key: s.rel(k.Key), Value: k.Value, Revision: k.ModRevision, CreateRevision: k.CreateRevision}
	if s.transformers == nil || len(k.Value) == 0 {
		return kv, nil
	}
	t := s.transformers(kv.Key)
	if t == nil {
		return kv, nil
	}
	out, stale, err := t.TransformFromStorage(ctx, k.Value, value.DefaultContext(k.Key))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", kv.Key, ErrUnreadable, err)
	}
	kv.Value, kv.Stale = out, stale
	return kv, nil
}
