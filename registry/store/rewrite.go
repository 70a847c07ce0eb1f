package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/storage"
	"github.com/concordproject/concord/wire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Rewrite re-encodes up to limit objects of res (all namespaces), starting where
// continueToken points, in the current storage version: the server-side form of a
// storage migration. It gives the results a client-side migrator gets from reading
// each object and writing it back unchanged:
//
//   - an object already encoded as the storage version would encode it, and sealed
//     with the current encryption key, is skipped (the write would change nothing, so
//     Kubernetes writes nothing);
//   - every other object is decoded, converted, defaulted and validated as an update
//     would, and written back only if it is still at the revision read (the same
//     optimistic precondition); one that moved meanwhile is skipped, because the write
//     that moved it encoded it in the storage version;
//   - an object that fails to decode, convert or validate is reported, not retried.
//
// The writes of a page go to etcd in as few transactions as etcd allows. Pages read
// the current state (not a snapshot: from the resource's watch cache once it has seen
// etcd's current revision, else from etcd), so objects created during a rewrite are
// already current. The error is a StatusError; per-object failures are in the result.
func (s *Store) Rewrite(ctx context.Context, res *registry.Resource, continueToken string, limit int64) (*wire.RewriteResult, error) {
	return s.RewriteGuarded(ctx, res, continueToken, limit, nil)
}

// RewriteGuard holds a rewrite's writes to the state of another object, the
// resource's StorageVersion (see wire.RewriteStorageVersionParam).
type RewriteGuard struct {
	// Resource and Name name the object.
	Resource *registry.Resource
	Name     string
	// ResourceVersion is the object's resourceVersion the caller started from.
	ResourceVersion int64
}

// RewriteGuarded is Rewrite with every write also conditioned, in its etcd
// transaction, on guard's object being still at guard.ResourceVersion (nil: Rewrite).
// Once it moved, nothing more is written: the result says StorageVersionChanged, and
// has no continue token.
func (s *Store) RewriteGuarded(ctx context.Context, res *registry.Resource, continueToken string, limit int64, guard *RewriteGuard) (*wire.RewriteResult, error) {
	prefix := res.Prefix("")
	start := ""
	if continueToken != "" {
		st, _, err := storage.DecodeContinue(prefix, continueToken)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error()) // the error names the token
		}
		start = st
	}
	if limit <= 0 || limit > 10000 {
		limit = 500
	}
	page, err := s.rewritePage(ctx, prefix, start, limit)
	if err != nil {
		return nil, s.storageError(res, "", err)
	}
	out := &wire.RewriteResult{Scanned: len(page.Items), ResourceVersion: strconv.FormatInt(page.Revision, 10)}
	if page.Remaining >= 0 {
		out.Remaining = &page.Remaining
	}
	var writes []storage.Write
	var names [][2]string
	for _, kv := range page.Items {
		data, ns, name, err := s.reencode(ctx, res, kv)
		switch {
		case err != nil:
			out.Failed = append(out.Failed, wire.RewriteFailure{Namespace: ns, Name: name, Reason: err.Error()})
		case bytes.Equal(data, kv.Value) && !kv.Stale:
			out.Skipped++
		default:
			writes = append(writes, storage.Write{Key: kv.Key, Value: data, Expected: kv.Revision})
			names = append(names, [2]string{ns, name})
		}
	}
	for _, w := range writes {
		s.rewritten.add(w.Key, w.Expected, w.Value)
	}
	var errs []error
	if guard == nil {
		_, errs = s.storage.WriteBatch(ctx, writes)
	} else {
		out.StorageVersionResourceVersion = strconv.FormatInt(guard.ResourceVersion, 10)
		g := storage.Guard{Key: guard.Resource.Key("", guard.Name), Revision: guard.ResourceVersion}
		_, errs = s.storage.WriteBatchGuarded(ctx, g, writes)
	}
	for i, err := range errs {
		switch {
		case err == nil:
			out.Rewritten++
		case errors.Is(err, storage.ErrGuardChanged):
			out.StorageVersionChanged = true
		case errors.Is(err, storage.ErrConflict), errors.Is(err, storage.ErrNotFound):
			out.Skipped++
		default:
			if ctx.Err() != nil {
				return nil, s.storageError(res, "", err)
			}
			out.Failed = append(out.Failed, wire.RewriteFailure{Namespace: names[i][0], Name: names[i][1], Reason: err.Error()})
		}
	}
	if page.More && len(page.Items) > 0 && !out.StorageVersionChanged {
		token, err := storage.EncodeContinue(prefix, page.Items[len(page.Items)-1].Key+"\x00", -1)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		out.Continue = token
	}
	return out, nil
}

// rewritePage reads the page of a rewrite: the objects under prefix from start on, up
// to limit, as they are now. A watch cache that already follows the prefix answers it
// once it has seen etcd's current revision. Else etcd answers (no cache is started for
// the rewrite alone): the first page counted, for the total, the others uncounted, in
// time proportional to the page (a counted page costs etcd a walk of every key after
// it: 90 ms at a million objects).
func (s *Store) rewritePage(ctx context.Context, prefix, start string, limit int64) (*storage.ListResult, error) {
	if c := s.caches.Running(prefix); c != nil {
		rev, err := s.storage.CurrentRevision(ctx)
		if err != nil {
			return nil, err
		}
		if c.WaitFresh(ctx, rev) == nil {
			if snap, err := c.Snapshot(); err == nil {
				entries, more := snap.Page(prefix, start, int(limit))
				// The cache holds the prefix alone: on the first page, what follows it
				// is the rest of the cache; further on, counting would cost a walk.
				remaining := int64(-1)
				if start == "" {
					remaining = int64(snap.Len() - len(entries))
				}
				page := &storage.ListResult{Items: make([]*storage.KeyValue, len(entries)), More: more, Revision: snap.Rev, Remaining: remaining}
				for i, e := range entries {
					page.Items[i] = e.KeyValue
				}
				return page, nil
			}
		}
	}
	return s.storage.List(ctx, prefix, storage.ListOptions{Limit: limit, Start: start, Uncounted: start != ""})
}

// reencode returns the bytes kv would be stored as if it were written back unchanged
// now, with the object's namespace and name for reports.
func (s *Store) reencode(ctx context.Context, res *registry.Resource, kv *storage.KeyValue) ([]byte, string, string, error) {
	obj, err := res.Decode(kv.Value, kv.Revision)
	if err != nil {
		ns, name := res.NamesOf(kv.Key)
		return nil, ns, name, err
	}
	ns, name := obj.GetNamespace(), obj.GetName()
	if err := res.Convert(ctx, []*registry.Object{obj}, res.StorageVersion); err != nil {
		return nil, ns, name, fmt.Errorf("conversion to %s failed: %w", res.StorageVersion, err)
	}
	res.Schema(res.StorageVersion).DefaultStored(obj.Object)
	// The update is the object itself: validation reads the old object and replaces
	// (never changes) the new one's content, so both may start from the same content.
	if err := res.ValidateUpdate(ctx, res.StorageVersion, "", obj, &registry.Object{Object: obj.Object}); err != nil {
		return nil, ns, name, err
	}
	data, err := res.Encode(ctx, obj)
	return data, ns, name, err
}
