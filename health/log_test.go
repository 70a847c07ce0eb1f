package health

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestLogFailsWhileFlushBlocks: the check passes while flushes complete and fails
// with ErrLoggingBlocked once one has blocked past the limit; it passes again once
// the flush completes.
func TestLogFailsWhileFlushBlocks(t *testing.T) {
	var mu sync.Mutex
	block := make(chan struct{})
	blocking := false
	flushes := make(chan struct{}, 100)
	flush := func() {
		mu.Lock()
		b := blocking
		mu.Unlock()
		if b {
			<-block
		}
		flushes <- struct{}{}
	}
	l := NewLog(flush, 5*time.Millisecond, 200*time.Millisecond)
	if err := l.Check(nil); err != nil {
		t.Fatalf("before Run: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- l.Run(ctx) }()
	<-flushes
	if err := l.Check(&http.Request{}); err != nil {
		t.Fatalf("flushing: %v", err)
	}
	mu.Lock()
	blocking = true
	mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for err := l.Check(nil); !errors.Is(err, ErrLoggingBlocked); err = l.Check(nil) {
		if time.Now().After(deadline) {
			t.Fatalf("the check still passes with a blocked flush: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Run returns while a flush blocks.
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	blocking = false
	mu.Unlock()
	close(block)
	go func() { done <- l.Run(t.Context()) }()
	for err := l.Check(nil); err != nil; err = l.Check(nil) {
		if time.Now().After(deadline) {
			t.Fatalf("the check still fails once flushes complete: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
