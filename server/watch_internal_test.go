package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/watch"
)

// The response's Sink keeps events until the store flushes, then writes and flushes
// them at once; once the watch's context is done it takes no more, so that a long
// starting state ends with the watch.
func TestEventWriterFlushesWhatItKeptAndStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	rec := httptest.NewRecorder()
	sent := prometheus.NewCounter(prometheus.CounterOpts{Name: "sent"})
	ew := &eventWriter{ctx: ctx, w: rec, rc: http.NewResponseController(rec), sent: sent,
		encode: func(dst []byte, ev watch.Event) []byte { return append(dst, string(ev.Type)+"\n"...) }}
	if !ew.Send(watch.Event{Type: watch.Added}) || !ew.Send(watch.Event{Type: watch.Modified}) {
		t.Fatal("Send refused an event of a live watch")
	}
	if rec.Body.Len() != 0 || rec.Flushed {
		t.Fatalf("written before the flush: %q", rec.Body.String())
	}
	if !ew.Flush() {
		t.Fatal("Flush failed")
	}
	if got := rec.Body.String(); got != "ADDED\nMODIFIED\n" || !rec.Flushed {
		t.Fatalf("after the flush: %q, flushed %v", got, rec.Flushed)
	}
	cancel()
	if ew.Send(watch.Event{Type: watch.Deleted}) {
		t.Fatal("Send took an event after the watch's context was done")
	}
	if rec.Body.String() != "ADDED\nMODIFIED\n" {
		t.Fatalf("written after the context was done: %q", rec.Body.String())
	}
}
