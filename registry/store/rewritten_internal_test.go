package store

import (
	"fmt"
	"testing"
)

// The record of rewrites answers for the exact key, revision read and bytes written,
// and forgets the oldest beyond its bound.
func TestRewrittenIsBounded(t *testing.T) {
	r := newRewritten()
	r.add("a", 5, []byte("v2"))
	if !r.has("a", 5, []byte("v2")) || r.has("a", 6, []byte("v2")) || r.has("a", 5, []byte("v3")) || r.has("b", 5, []byte("v2")) {
		t.Fatal("has answers for another key, revision or value than the one recorded")
	}
	for i := range rewrittenCap {
		r.add(fmt.Sprintf("k-%d", i), int64(i), []byte("v"))
	}
	if r.has("a", 5, []byte("v2")) {
		t.Error("the oldest record outlived the bound")
	}
	if !r.has(fmt.Sprintf("k-%d", rewrittenCap-1), int64(rewrittenCap-1), []byte("v")) || len(r.last) != rewrittenCap {
		t.Errorf("after %d more records: %d kept, want the newest %d", rewrittenCap, len(r.last), rewrittenCap)
	}
}
