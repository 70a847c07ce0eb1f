package logbuf

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer safe for one or more writers and concurrent readers. Its
// zero value is ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Len is the number of bytes written so far, a mark of progress for waits.
func (b *Buffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Tail is the last n lines written, or all of them when there are fewer.
func (b *Buffer) Tail(n int) string {
	lines := strings.Split(b.String(), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
