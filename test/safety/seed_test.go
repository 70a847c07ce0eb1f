package safety

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"
)

// storedBatch is how many seeded objects one etcd transaction writes.
const storedBatch = 100

// seedStored writes widgets from to n straight into etcd: each a copy of the first
// seeded widget as a server stored it (bulk-0), with its own name and uid, 100 to a
// transaction from 4 goroutines. A million objects written through the servers would
// take most of a scenario's time; written this way, the servers take them in from
// their watches as they would another server's writes, at etcd's pace.
func (f *fleet) seedStored(from, n int) {
	f.t.Helper()
	ctx := f.t.Context()
	prefix := "/registry/" + widgets.Group + "/" + widgets.Resource + "/" + namespace + "/"
	resp, err := f.etcd.Get(ctx, prefix+bulkName(0))
	if err != nil || len(resp.Kvs) != 1 {
		f.t.Fatalf("reading the stored %s: %v (%d keys)", bulkName(0), err, len(resp.Kvs))
	}
	var template map[string]any
	if err := json.Unmarshal(resp.Kvs[0].Value, &template); err != nil {
		f.t.Fatalf("the stored %s is not JSON: %v", bulkName(0), err)
	}
	started := time.Now()
	var next atomic.Int64
	next.Store(int64(from))
	g, gctx := errgroup.WithContext(ctx)
	for range 4 {
		g.Go(func() error {
			for {
				start := int(next.Add(storedBatch)) - storedBatch
				if start >= n {
					return nil
				}
				ops := make([]clientv3.Op, 0, storedBatch)
				for i := start; i < min(start+storedBatch, n); i++ {
					value, err := storedCopy(template, i)
					if err != nil {
						return err
					}
					ops = append(ops, clientv3.OpPut(prefix+bulkName(i), value))
				}
				if _, err := f.etcd.Txn(gctx).Then(ops...).Commit(); err != nil {
					return fmt.Errorf("seeding widgets %d to %d: %w", start, start+len(ops), err)
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Logf("%d widgets written straight into etcd in %v", n-from, time.Since(started).Round(time.Second))
}

// storedCopy is template with the name and uid of the i-th seeded widget.
func storedCopy(template map[string]any, i int) (string, error) {
	meta, _ := template["metadata"].(map[string]any)
	copied := make(map[string]any, len(meta))
	for k, v := range meta {
		copied[k] = v
	}
	copied["name"] = bulkName(i)
	copied["uid"] = fmt.Sprintf("5eed0000-0000-4000-8000-%012d", i)
	obj := make(map[string]any, len(template))
	for k, v := range template {
		obj[k] = v
	}
	obj["metadata"] = copied
	b, err := json.Marshal(obj)
	return string(b), err
}

// storedPage is how many keys one read of eachStored takes from etcd.
const storedPage = 10000

// eachStored calls fn with every key under prefix and its value, reading etcd a page
// at a time at one revision: a prefix of a million objects is more than one response
// should carry.
func (f *fleet) eachStored(ctx context.Context, prefix string, fn func(key string, value []byte)) error {
	end := clientv3.GetPrefixRangeEnd(prefix)
	key, rev := prefix, int64(0)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(storedPage)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := f.etcd.Get(ctx, key, opts...)
		if err != nil {
			return err
		}
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			fn(string(kv.Key), kv.Value)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}
