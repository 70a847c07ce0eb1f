// Package storage is Concord's raw access to etcd: keys, revisions and bytes.
//
// It owns the etcd semantics every higher layer relies on:
//
//   - a key's mod revision is the object's resourceVersion;
//   - Create succeeds only if the key is absent (one transaction);
//   - Update and Delete succeed only if the key is still at the revision the caller
//     read (one transaction); on a mismatch they return ErrConflict together with the
//     current value, so a retry loop needs no extra read;
//   - List reads one page of a key range at one revision, and a continue token pins
//     the following pages to that same revision; a page that need not say how many
//     keys follow it (ListOptions.Uncounted: a cache's load, a rewrite's later pages)
//     is read through etcd's range stream and cut after the page, so that paging
//     through a million keys costs etcd the pages, not a count of the rest at each;
//   - Watch streams every change under a prefix after a revision, in order, over
//     etcd's Watch service spoken directly (not clientv3's Watcher, which buffers
//     without bound what its reader has not taken): it receives from etcd only as
//     fast as its reader takes, so a slow reader's backlog stays in etcd; a stream
//     that breaks is opened again where the reader stands, unseen by it;
//   - with WithTransformers, every value is sealed on its way to etcd and opened on
//     the way back (encryption at rest, package encryption's transformers), and values
//     sealed otherwise than writes are now are marked Stale, so that a storage
//     migration knows to rewrite them; a value that cannot be opened is ErrUnreadable.
//
// It knows nothing about objects, versions or conversion: the registry package decodes
// and encodes. It must not import registry, server, or any Kubernetes API types; of
// Kubernetes it uses k8s.io/apiserver's value transformers and apimachinery's
// backoff (for package retry, the one package of Concord it imports).
//
// A typical read-modify-write:
//
//	kv, err := s.Get(ctx, key)
//	// decode kv.Value, change it, encode it as next
//	rev, err := s.Update(ctx, key, next, kv.Revision)
//	if errors.Is(err, storage.ErrConflict) {
//		// err is a *ConflictError carrying the current value: decode and retry
//	}
package storage
