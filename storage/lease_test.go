package storage_test

import (
	"errors"
	"testing"
	"time"

	"github.com/concordproject/concord/storage"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Keys written WithTTL share a lease per TTL and reuse window, live at least the TTL,
// then vanish; an update renews the expiry; a rewrite batch keeps the key's lease;
// keys written without a TTL never get one.
func TestWritesWithTTL(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	cli := s.Client()
	lease := func(key string) clientv3.LeaseID {
		t.Helper()
		resp, err := cli.Get(ctx, "/test/"+key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("get %s: %v, %d keys", key, err, len(resp.Kvs))
		}
		return clientv3.LeaseID(resp.Kvs[0].Lease)
	}
	const ttl = 2 * time.Second
	revA, err := s.Create(ctx, "a", []byte("1"), storage.WithTTL(ttl))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "b", []byte("1"), storage.WithTTL(ttl)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "forever", []byte("1")); err != nil {
		t.Fatal(err)
	}
	la := lease("a")
	if la == 0 || lease("b") != la || lease("forever") != 0 {
		t.Fatalf("leases: a %x, b %x, forever %x; want a shared lease for a and b, none for forever", la, lease("b"), lease("forever"))
	}
	ttlResp, err := cli.TimeToLive(ctx, la)
	if err != nil || ttlResp.GrantedTTL < 2 || ttlResp.GrantedTTL > 3 {
		t.Fatalf("lease granted for %ds (%v), want the TTL plus the reuse window, rounded up: 3s", ttlResp.GrantedTTL, err)
	}
	// A rewrite keeps the lease.
	if _, errs := s.WriteBatch(ctx, []storage.Write{{Key: "a", Value: []byte("2"), Expected: revA}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if lease("a") != la {
		t.Fatal("a rewrite dropped the key's lease")
	}
	// Once the window has passed, a new lease; the update moves b to it.
	time.Sleep(reuseWindowFor(ttl) + 10*time.Millisecond)
	kv, err := s.Get(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "b", []byte("2"), kv.Revision, storage.WithTTL(ttl)); err != nil {
		t.Fatal(err)
	}
	if lb := lease("b"); lb == 0 || lb == la {
		t.Fatalf("updated b has lease %x, want a new one (not %x)", lb, la)
	}
	// a expires; b, renewed later, may outlive it; forever stays.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, errA := s.Get(ctx, "a")
		_, errB := s.Get(ctx, "b")
		if errors.Is(errA, storage.ErrNotFound) && errors.Is(errB, storage.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: a %v, b %v; want both expired", errA, errB)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := s.Get(ctx, "forever"); err != nil {
		t.Fatalf("a key without TTL went: %v", err)
	}
}

// reuseWindowFor mirrors the package's reuse window: ttl/20, at most a minute.
func reuseWindowFor(ttl time.Duration) time.Duration { return min(time.Minute, ttl/20) }
