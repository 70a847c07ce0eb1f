package logbuf

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestConcurrentWritersLoseNothing(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				fmt.Fprintf(&b, "w%d line %d\n", w, i)
				_ = b.Len()
			}
		}()
	}
	wg.Wait()
	if got := strings.Count(b.String(), "\n"); got != 800 {
		t.Fatalf("%d lines, want 800", got)
	}
}

func TestTail(t *testing.T) {
	var b Buffer
	if got := b.Tail(3); got != "" {
		t.Fatalf("empty buffer's tail %q", got)
	}
	fmt.Fprint(&b, "a\nb\nc\nd")
	if got := b.Tail(2); got != "c\nd" {
		t.Fatalf("Tail(2) = %q, want %q", got, "c\nd")
	}
	if got := b.Tail(10); got != "a\nb\nc\nd" {
		t.Fatalf("Tail(10) = %q", got)
	}
}
