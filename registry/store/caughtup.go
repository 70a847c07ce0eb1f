package store

import (
	"context"
	"strconv"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/watchcache"
	"github.com/concordproject/concord/storage"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rewritesBehind bounds how many re-encodings a client's resourceVersion may be behind
// the stored object and still count as current (see onlyRewrittenSince).
const rewritesBehind = 4

// onlyRewrittenSince reports whether every change of kv's key after revision rv only
// re-encoded the object (sameMeaning): a storage migration's rewrites, of which
// watches send no event. A client that has the object at rv, from a watch or an
// informer, then has the current object in all but its resourceVersion, and its
// update or deletion conditional on rv is decided as one conditional on kv: what
// Kubernetes decides for a client that was sent the migration's events. The check
// walks back one version at a time, so that a change undone in between is never
// mistaken for none; it reads etcd only when rv is stale, and gives up (false) past
// rewritesBehind versions or a compacted revision.
func (s *Store) onlyRewrittenSince(ctx context.Context, res *registry.Resource, kv *storage.KeyValue, rv string) bool {
	want, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || want < kv.CreateRevision || want >= kv.Revision {
		return false
	}
	cur := kv
	for range rewritesBehind {
		prev, err := s.storage.GetAt(ctx, cur.Key, cur.Revision-1)
		if err != nil || prev.Revision < want || prev.CreateRevision != kv.CreateRevision {
			return false
		}
		if !s.sameMeaning(ctx, &watchcache.Event{Type: storage.Put, Rev: cur.Revision, KV: cur, Prev: prev}, res) {
			return false
		}
		if prev.Revision == want {
			return true
		}
		cur = prev
	}
	return false
}

// caughtUp returns p with its resourceVersion moved to kv's when it is behind kv by
// re-encodings only (onlyRewrittenSince), and p otherwise.
func (s *Store) caughtUp(ctx context.Context, res *registry.Resource, kv *storage.KeyValue, p *metav1.Preconditions) *metav1.Preconditions {
	if p == nil || p.ResourceVersion == nil || *p.ResourceVersion == strconv.FormatInt(kv.Revision, 10) {
		return p
	}
	if !s.onlyRewrittenSince(ctx, res, kv, *p.ResourceVersion) {
		return p
	}
	return movedPreconditions(p, strconv.FormatInt(kv.Revision, 10))
}
