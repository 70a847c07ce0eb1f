package store

import (
	"context"
	"errors"
	"strconv"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/storage"
)

// Delete deletes ns/name of res and returns the object as it was last stored, in
// version, and whether it is gone. An object with finalizers (or one its resource's
// hooks hold back) is not removed: its deletionTimestamp is set (once) and it stays
// until the finalizers are removed by updates. Preconditions on uid and
// resourceVersion are a 409 Conflict when they fail.
func (s *Store) Delete(ctx context.Context, ref Ref, opts DeleteOptions) (*registry.Object, bool, error) {
	res, version, name, pre := ref.Resource, ref.Version, ref.Name, opts.Preconditions
	key := ref.key()
	kv, err := s.storage.Get(ctx, key)
	for {
		if err != nil {
			return nil, false, s.storageError(res, name, err)
		}
		current, err := s.decodeAs(ctx, res, kv, version)
		if err != nil {
			return nil, false, err
		}
		if err := checkPreconditions(res, name, current, pre); err != nil {
			return nil, false, err
		}
		if res.Hooks != nil && res.Hooks.AdmitDelete != nil && current.GetDeletionTimestamp() == nil {
			if err := res.Hooks.AdmitDelete(ctx, current); err != nil {
				return nil, false, err
			}
		}
		var rev int64
		var werr error
		deleted := false
		if len(current.GetFinalizers()) > 0 || pendingByHook(res, current) {
			if current.GetDeletionTimestamp() != nil {
				return current, false, nil // already terminating
			}
			now := s.nowTime()
			var zero int64
			current.SetDeletionTimestamp(&now)
			current.SetDeletionGracePeriodSeconds(&zero)
			if res.Hooks != nil && res.Hooks.PrepareForDelete != nil {
				res.Hooks.PrepareForDelete(ctx, current)
			}
			if opts.DryRun {
				return current, false, nil
			}
			data, eerr := res.Encode(ctx, current)
			if eerr != nil {
				return nil, false, s.conversionError(res, eerr)
			}
			rev, werr = s.storage.Update(ctx, key, data, kv.Revision, storage.WithTTL(res.TTL))
		} else {
			if opts.DryRun {
				return current, true, nil
			}
			deleted = true
			rev, werr = s.storage.Delete(ctx, key, kv.Revision)
		}
		if werr == nil {
			s.recent.Forget(key)
			if deleted {
				release(ctx, res, current)
			}
			if !deleted {
				current.SetResourceVersion(strconv.FormatInt(rev, 10))
			}
			return current, deleted, nil
		}
		var ce *storage.ConflictError
		if !errors.As(werr, &ce) {
			return nil, false, s.storageError(res, name, werr)
		}
		if ce.Current == nil {
			return nil, false, s.storageError(res, name, storage.ErrNotFound)
		}
		kv = ce.Current
	}
}
