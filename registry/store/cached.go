package store

import (
	"bytes"
	"context"

	"github.com/concordproject/concord/objectjson"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/watchcache"
	"github.com/concordproject/concord/storage"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// This file holds the rules by which the watch caches (package watchcache) answer
// reads: which lists and watches a cache may serve, and how its shared changes become
// each watch's events.

// cachedState returns the cache of res and the state a read planned as at may be
// answered from. ok is false when etcd must answer it instead: caching is off or the
// resource's cache did not fit, the cache has not loaded, it no longer holds the exact
// revision asked for, or it did not reach the revision the read needs in time.
func (s *Store) cachedState(ctx context.Context, res *registry.Resource, at listStart) (c *watchcache.Cache, snap *watchcache.Snapshot, ok bool, err error) {
	c = s.caches.Get(res.Prefix(""), at.rev)
	if c == nil || !c.WaitReady(ctx) {
		return nil, nil, false, nil
	}
	if at.rev > 0 {
		if snap, ok = c.SnapshotAt(at.rev); !ok {
			return nil, nil, false, nil
		}
		// A state etcd has compacted is gone for every server: the read gets etcd's
		// answer (410 Expired), as it would from any server without the snapshot.
		if err := s.storage.CheckRevision(ctx, at.rev); err != nil {
			return nil, nil, false, nil
		}
		return c, snap, true, nil
	}
	want := at.minRV
	if at.consistent {
		// Every write acknowledged before this read has a revision at most etcd's
		// current one (a linearizable read); the cache must have seen it.
		if want, err = s.storage.CurrentRevision(ctx); err != nil {
			return nil, nil, false, s.storageError(res, "", err)
		}
	}
	if err := c.WaitFresh(ctx, want); err != nil {
		if ctx.Err() != nil {
			return nil, nil, false, s.storageError(res, "", ctx.Err())
		}
		return nil, nil, false, nil
	}
	if snap, err = c.Snapshot(); err != nil {
		return nil, nil, false, nil
	}
	return c, snap, true, nil
}

// listCached answers a list from a cache's snapshot, with the paging rules of an
// etcd read: a page that stops early carries a continue token at the snapshot's
// revision, and the snapshot is kept for it.
func (s *Store) listCached(ctx context.Context, ref Ref, p listParams) (*unstructured.UnstructuredList, error) {
	sel, err := s.selectEntries(ref, p, true)
	if err != nil {
		return nil, err
	}
	return s.finishList(ctx, ref.Resource, ref.Version, p.out, sel.objs, p.snap.Rev, ref.prefix(), sel.unreadable)
}

// selection is what a list selected from a snapshot: entries in key order, with
// their decoded objects where they were decoded (selectors, or decode asked).
type selection struct {
	entries    []*watchcache.Entry
	objs       []*registry.Object
	unreadable []unreadableObject
}

// selectEntries walks a snapshot from the list's start key, selecting the entries
// its selectors match up to its limit, and gives the list its continue token.
// Objects are decoded when selectors need them, or when decode is set.
func (s *Store) selectEntries(ref Ref, p listParams, decode bool) (selection, error) {
	res, prefix, snap := ref.Resource, ref.prefix(), p.snap
	items := snap.Items(prefix)
	i := 0
	if p.at.key != "" {
		i = watchcache.Search(items, p.at.key)
	}
	var sel selection
	for ; i < len(items); i++ {
		e := items[i]
		var obj *registry.Object
		if decode || !p.pred.Empty() {
			var err error
			if obj, err = s.decodeListed(res, prefix, e.KeyValue, &sel.unreadable); obj == nil {
				if err != nil {
					return sel, err
				}
				continue
			}
			if !p.pred.Matches(obj) {
				continue
			}
		}
		sel.entries = append(sel.entries, e)
		sel.objs = append(sel.objs, obj)
		if p.limit > 0 && int64(len(sel.entries)) == p.limit {
			if i < len(items)-1 {
				if err := setContinue(p.out, prefix, e.Key, snap.Rev, int64(len(items)-1-i), p.pred.Empty()); err != nil {
					return sel, err
				}
				p.cache.Keep(snap)
			}
			break
		}
	}
	if len(sel.unreadable) > 0 {
		return sel, s.unreadableError(res, prefix, sel.unreadable, false)
	}
	return sel, nil
}

// listParams is what List has worked out of a list's options, and the cache's state
// that answers it (snap nil: etcd does).
type listParams struct {
	pred  *registry.Predicate
	at    listStart
	limit int64
	out   *unstructured.UnstructuredList
	cache *watchcache.Cache
	snap  *watchcache.Snapshot
}

// initialState reads the state a watch starts with (the key/values under ns's
// prefix), at a revision chosen as a list's: from the resource's cache if it can
// answer, else from etcd. The values are the cache's own, shared, not copied.
func (s *Store) initialState(ctx context.Context, res *registry.Resource, ns string, at listStart) (*startState, error) {
	cache, snap, ok, err := s.cachedState(ctx, res, at)
	if err != nil {
		return nil, err
	}
	if !ok {
		s.caches.Observe(res.Prefix(""), "watch", false)
		return s.readState(ctx, res, ns, at.minRV)
	}
	return &startState{rev: snap.Rev, entries: snap.Items(res.Prefix(ns)), cache: cache}, nil
}

// subscribe returns a queue of every change of res after revision from: from the
// resource's cache if it holds them, else from a private watch of etcd's history.
func (s *Store) subscribe(ctx context.Context, res *registry.Resource, from int64) *watchcache.Watcher {
	prefix := res.Prefix("")
	if c := s.caches.Get(prefix, from); c != nil && c.WaitReady(ctx) {
		if w, err := c.Watch(from); err == nil {
			s.caches.Observe(prefix, "watch", true)
			return w
		}
	}
	s.caches.Observe(prefix, "watch", false)
	return s.caches.Private(ctx, prefix, from, s.BookmarkInterval)
}

// decodedKey keys an event's decoded objects in its memo: per definition, since a
// resource redefined at run time may decode differently.
type decodedKey struct {
	res  *registry.Resource
	prev bool
}

// eventObject returns the object after (prev: before) a change, decoded once per
// event and definition while it is in use (the event holds it weakly), with the
// change's revision as its resourceVersion. Shared: do not modify.
func eventObject(ev *watchcache.Event, res *registry.Resource, prev bool) (*registry.Object, error) {
	return decodedObject(ev, decodedKey{res, prev}, res, prev)
}

// decodedObject is eventObject with its memo key, decodedKey{res, prev}, given boxed.
func decodedObject(ev *watchcache.Event, key any, res *registry.Resource, prev bool) (*registry.Object, error) {
	return watchcache.MemoWeak(ev, key, func() (*registry.Object, error) {
		kv := ev.KV
		if prev {
			kv = ev.Prev
		}
		return res.Decode(kv.Value, ev.Rev)
	})
}

type sameKey struct{ res *registry.Resource }

// sameMeaning reports whether a change only re-encoded its object: the same bytes (a
// value written back unchanged, or re-encrypted with a new key), or a new storage
// version whose content, converted back to the previous one, equals the previous
// object (defaults applied, resourceVersion aside). A storage migration makes such
// changes; to a watcher the object is the same, so no event is sent for them.
func (s *Store) sameMeaning(ctx context.Context, ev *watchcache.Event, res *registry.Resource) bool {
	if ev.Type != storage.Put || ev.Prev == nil {
		return false
	}
	if bytes.Equal(ev.Prev.Value, ev.KV.Value) || s.rewritten.has(ev.KV.Key, ev.Prev.Revision, ev.KV.Value) {
		return true
	}
	if prev, ok := objectjson.LeadingString(ev.Prev.Value, "apiVersion"); ok {
		// The same storage version, read off both values as Encode writes them
		// (apiVersion first): the meaning changed with the bytes, and neither
		// needs decoding here.
		if cur, ok := objectjson.LeadingString(ev.KV.Value, "apiVersion"); ok && bytes.Equal(prev, cur) {
			return false
		}
	}
	v, _ := ev.Memo(sameKey{res}, func() (any, error) {
		cur, err := eventObject(ev, res, false)
		if err != nil {
			return false, err
		}
		prev, err := eventObject(ev, res, true)
		if err != nil || prev.GetAPIVersion() == cur.GetAPIVersion() {
			return false, err
		}
		gv, err := schema.ParseGroupVersion(prev.GetAPIVersion())
		if err != nil {
			return false, err
		}
		a, b := prev.DeepCopy(), cur.DeepCopy()
		if err := res.Convert(context.WithoutCancel(ctx), []*registry.Object{b}, gv.Version); err != nil {
			return false, err
		}
		sch := res.Schema(gv.Version)
		for _, o := range []*registry.Object{a, b} {
			sch.DefaultStored(o.Object)
			unstructured.RemoveNestedField(o.Object, "metadata", "resourceVersion")
		}
		return equality.Semantic.DeepEqual(a.Object, b.Object), nil
	})
	same, _ := v.(bool)
	return same
}
