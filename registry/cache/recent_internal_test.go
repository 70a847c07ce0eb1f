package cache

import (
	"fmt"
	"testing"

	"github.com/concordproject/concord/storage"
)

// recentObjects keeps its byte count exact through additions, replacements, removals
// and evictions, and stays within its byte budget.
func TestRecentObjectsByteBudget(t *testing.T) {
	r := NewRecent()
	value := make([]byte, recentMaxValue)
	n := recentObjectsBytes/recentMaxValue + 10
	for i := range n {
		r.Saw(&storage.KeyValue{Key: fmt.Sprint(i), Value: value, Revision: int64(i + 1)})
	}
	if got, want := r.cache.Len(), recentObjectsBytes/recentMaxValue; got != want {
		t.Fatalf("holds %d objects of %d bytes, want %d (the byte budget)", got, recentMaxValue, want)
	}
	if r.Get("0") != nil || r.Get(fmt.Sprint(n-1)) == nil {
		t.Fatal("the least recently used objects were not the ones evicted")
	}
	// Replacing with a smaller, newer value; an older one is ignored.
	last := fmt.Sprint(n - 1)
	r.Saw(&storage.KeyValue{Key: last, Value: []byte("small"), Revision: int64(n + 1)})
	r.Saw(&storage.KeyValue{Key: last, Value: value, Revision: 1})
	if kv := r.Get(last); string(kv.Value) != "small" {
		t.Fatalf("%s holds %d bytes, want the newer small value", last, len(kv.Value))
	}
	r.Forget(last)
	want := int64(r.cache.Len()) * recentMaxValue
	if got := r.bytes.Load(); got != want {
		t.Fatalf("counts %d bytes, holds %d", got, want)
	}
	// Too large to keep.
	r.Saw(&storage.KeyValue{Key: "big", Value: make([]byte, recentMaxValue+1), Revision: 1})
	if r.Get("big") != nil {
		t.Fatal("kept a value above recentMaxValue")
	}
}
