package store_test

import (
	"fmt"
	"testing"

	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/wire"
)

func TestRewriteReencodesInTheStorageVersion(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	v1 := widgets(t, "v1")
	for i := 0; i < 25; i++ {
		if _, err := s.Create(ctx, store.Ref{Resource: v1, Version: "v1"}, widget("v1", fmt.Sprintf("w-%02d", i)), store.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// One object written by a newer release in a version this server cannot decode.
	v3 := widgets(t, "v3", "v1", "v2", "v3")
	if _, err := s.Create(ctx, store.Ref{Resource: v3, Version: "v3"}, widget("v3", "w-future"), store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	v2 := widgets(t, "v2")
	total := wire.RewriteResult{}
	token := ""
	pages := 0
	for {
		r, err := s.Rewrite(ctx, v2, token, 10)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		total.Scanned += r.Scanned
		total.Rewritten += r.Rewritten
		total.Skipped += r.Skipped
		total.Failed = append(total.Failed, r.Failed...)
		if token = r.Continue; token == "" {
			break
		}
	}
	if pages != 3 || total.Scanned != 26 || total.Rewritten != 25 || total.Skipped != 0 || len(total.Failed) != 1 || total.Failed[0].Name != "w-future" {
		t.Fatalf("pages %d, result %+v", pages, total)
	}
	for i := 0; i < 25; i++ {
		if got := storedAPIVersion(t, s, v2, fmt.Sprintf("w-%02d", i)); got != "example.com/v2" {
			t.Fatalf("w-%02d still stored as %s", i, got)
		}
	}
	// A second pass finds nothing to do.
	r, err := s.Rewrite(ctx, v2, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	if r.Rewritten != 0 || r.Skipped != 25 {
		t.Fatalf("second pass: %+v", r)
	}
}
