package store

import (
	"context"
	"errors"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/storage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Get returns the object ns/name of res converted to version. opts.ResourceVersion ""
// or "0" reads the current object; N reads an object at least as new as N (504
// ResourceVersionTooLarge if the store has not reached N).
func (s *Store) Get(ctx context.Context, ref Ref, opts metav1.GetOptions) (*registry.Object, error) {
	res, version, name := ref.Resource, ref.Version, ref.Name
	var minRV int64
	if rv := opts.ResourceVersion; rv != "" && rv != "0" {
		n, err := parseRV(res.GroupResource(), rv)
		if err != nil {
			return nil, err
		}
		minRV = n
	}
	kv, err := s.getFresh(ctx, ref.key())
	if err != nil {
		if minRV > 0 && errors.Is(err, storage.ErrNotFound) {
			if cur, cerr := s.storage.CurrentRevision(ctx); cerr == nil {
				if terr := checkNotTooNew(minRV, cur); terr != nil {
					return nil, terr
				}
			}
		}
		return nil, s.storageError(res, name, err)
	}
	if minRV > kv.Revision {
		cur, err := s.storage.CurrentRevision(ctx)
		if err != nil {
			return nil, s.storageError(res, name, err)
		}
		if err := checkNotTooNew(minRV, cur); err != nil {
			return nil, err
		}
	}
	return s.decodeAs(ctx, res, kv, version)
}

// GetRaw returns the stored bytes of ns/name and their revision, undecoded: for
// callers that check what is really in etcd (tests, migration proofs).
func (s *Store) GetRaw(ctx context.Context, ref Ref) (*storage.KeyValue, error) {
	kv, err := s.storage.Get(ctx, ref.key())
	if err != nil {
		return nil, s.storageError(ref.Resource, ref.Name, err)
	}
	return kv, nil
}
