package server

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/concordproject/concord/objectjson"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/respond"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// serveWatch streams watch events: newline-separated JSON WatchEvents, or
// length-prefixed protobuf ones to clients that negotiated protobuf. The watch
// ends at timeoutSeconds (or the server's maximum, with jitter), when the client goes
// away, or when the server shuts down.
func (s *Server) serveWatch(w http.ResponseWriter, r *http.Request, q *apiRequest) {
	opts, err := s.listOptions(r)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	timeout := time.Duration(float64(s.cfg.MaxWatchTimeout) * (1 + rand.Float64()))
	if opts.TimeoutSeconds != nil && *opts.TimeoutSeconds != 0 {
		// A timeout that is not positive ends the watch at once, as in Kubernetes.
		timeout = max(0, time.Duration(*opts.TimeoutSeconds)*time.Second)
	}
	if timeout == 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	go func() {
		select {
		case <-s.watchStop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if q.info.Name != "" {
		// A watch of one object is a watch with a name field selector.
		sel := "metadata.name=" + q.info.Name
		if opts.FieldSelector != "" {
			sel += "," + opts.FieldSelector
		}
		opts.FieldSelector = sel
	}
	stream, err := s.startWatch(ctx, q, opts)
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	defer stream.Stop()
	labels := []string{"watch", q.res.Group, q.version.Name, q.res.Names.Plural}
	s.metrics.longrun.WithLabelValues(labels...).Inc()
	defer s.metrics.longrun.WithLabelValues(labels...).Dec()

	appendEvent, ctype := watchEncoding(q)
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	ew := s.eventWriter(ctx, w, r, q, appendEvent)
	stream.Run(ew)
	if ctx.Err() == nil {
		ew.Flush() // the watch's last events, an Error event among them
	}
}

// watchWriteBatch is how many bytes of events a watch keeps at most before it writes
// them.
const watchWriteBatch = 32 << 10

// eventWriter is the store.Sink of a watch's response: it encodes each event into a
// buffer, written (and flushed) when the store flushes it (before it waits for more
// changes; while they keep coming, at most once per the store's WatchFlushInterval),
// or once it holds watchWriteBatch bytes. The events of one change, or of a backlog (up
// to watchWriteBatch bytes at a time), go to the client in one write: the response
// writer hands each write to the connection's goroutine and waits for it.
type eventWriter struct {
	// ctx is the watch's: once it is done (the client left, the timeout, the server's
	// shutdown), the writer takes no more events, so that a long starting state stops
	// there too.
	ctx    context.Context
	encode func(dst []byte, ev watch.Event) []byte
	buf    []byte
	// n is how many events buf holds.
	n    int
	w    http.ResponseWriter
	rc   *http.ResponseController
	sent prometheus.Counter
	// unflushed: written since the last flush.
	unflushed bool
}

// eventWriter returns the writer of the events of a watch, each rendered for the
// request (watchObject) and encoded with appendEvent; an event that cannot be is an
// Error event.
func (s *Server) eventWriter(ctx context.Context, w http.ResponseWriter, r *http.Request, q *apiRequest,
	appendEvent func([]byte, watch.EventType, runtime.Object) ([]byte, error)) *eventWriter {
	columnsSent := false
	sent := s.metrics.watchSent.WithLabelValues(q.res.Group, q.version.Name, q.res.Names.Plural)
	return &eventWriter{ctx: ctx, w: w, rc: http.NewResponseController(w), sent: sent, encode: func(dst []byte, ev watch.Event) []byte {
		obj, err := s.watchObject(r, q, ev, &columnsSent)
		if err != nil {
			ev, obj = watch.Event{Type: watch.Error}, respond.ErrorToStatus(err)
		}
		out, err := appendEvent(dst, ev.Type, obj)
		if err != nil {
			out, _ = appendEvent(dst, watch.Error, respond.ErrorToStatus(apierrors.NewInternalError(err)))
		}
		return out
	}}
}

// Send encodes ev, and writes what the buffer holds once it is full.
func (ew *eventWriter) Send(ev watch.Event) bool {
	if ew.ctx.Err() != nil {
		return false
	}
	ew.buf = ew.encode(ew.buf, ev)
	ew.n++
	return len(ew.buf) < watchWriteBatch || ew.write()
}

// write writes what the buffer holds.
func (ew *eventWriter) write() bool {
	if ew.n == 0 {
		return true
	}
	_, err := ew.w.Write(ew.buf)
	if err == nil {
		ew.sent.Add(float64(ew.n))
	}
	ew.buf, ew.n, ew.unflushed = ew.buf[:0], 0, true
	return err == nil
}

// Flush writes what the buffer holds and flushes the response.
func (ew *eventWriter) Flush() bool {
	if !ew.write() {
		return false
	}
	if !ew.unflushed {
		return true
	}
	ew.unflushed = false
	return ew.rc.Flush() == nil
}

// startWatch starts the store's watch for a request. A watch of the objects
// themselves has its starting state sent as list items are, in the same encodings
// (store.EncodedObject).
func (s *Server) startWatch(ctx context.Context, q *apiRequest, opts metav1.ListOptions) (*store.Stream, error) {
	ref := store.Ref{Resource: q.res, Version: q.version.Name, Namespace: q.info.Namespace}
	if q.out.Output != respond.OutputObject {
		return s.cfg.Store.Stream(ctx, ref, opts, nil)
	}
	n := respond.Negotiation{Protobuf: q.out.Protobuf, CBOR: q.out.CBOR}
	return s.cfg.Store.Stream(ctx, ref, opts, &store.ItemEncoder{
		Format: respond.ItemFormat(n),
		Encode: func(o *registry.Object) ([]byte, error) { return respond.EncodeItem(n, o) },
	})
}

// watchEncoding returns how the events of a watch are written, and their media type.
func watchEncoding(q *apiRequest) (func([]byte, watch.EventType, runtime.Object) ([]byte, error), string) {
	switch {
	case q.out.Protobuf:
		apiVersion, kind := q.res.APIVersion(q.version.Name), q.res.Names.Kind
		return func(dst []byte, t watch.EventType, obj runtime.Object) ([]byte, error) {
			if eo, ok := obj.(*store.EncodedObject); ok {
				raw, err := respond.ProtobufEnvelope(apiVersion, kind, eo.Raw)
				if err != nil {
					return dst, err
				}
				return respond.AppendProtobufWatchFrame(dst, t, raw)
			}
			return appendProtobufWatchEvent(dst, t, obj)
		}, respond.ProtobufMediaType + ";stream=watch"
	case q.out.CBOR:
		return appendCBORWatchEvent, respond.CBORSeqMediaType
	}
	return appendWatchEvent, "application/json"
}

// appendWatchEvent appends the wire form of a watch event, metav1.WatchEvent with the
// object inline, and a newline. An object shared by several watches is encoded once.
func appendWatchEvent(dst []byte, t watch.EventType, obj runtime.Object) ([]byte, error) {
	dst = append(dst, `{"type":`...)
	dst, _ = objectjson.Append(dst, string(t))
	dst = append(dst, `,"object":`...)
	var err error
	if eo, ok := obj.(*store.EncodedObject); ok {
		dst = append(dst, eo.Raw...)
	} else if so, ok := obj.(*store.SharedObject); ok {
		var b []byte
		b, err = so.Encoded("json", func(u *unstructured.Unstructured) ([]byte, error) { return respond.AppendJSON(nil, u) })
		dst = append(dst, b...)
	} else {
		dst, err = respond.AppendJSON(dst, obj)
	}
	return append(dst, "}\n"...), err
}

// appendProtobufWatchEvent appends one frame of a protobuf watch stream. An object
// shared by several watches is encoded once.
func appendProtobufWatchEvent(dst []byte, t watch.EventType, obj runtime.Object) ([]byte, error) {
	so, ok := obj.(*store.SharedObject)
	if !ok {
		return respond.AppendProtobufWatchEvent(dst, t, obj)
	}
	raw, err := so.Encoded("protobuf", func(u *unstructured.Unstructured) ([]byte, error) { return respond.AppendProtobuf(nil, u) })
	if err != nil {
		return dst, err
	}
	return respond.AppendProtobufWatchFrame(dst, t, raw)
}

// appendCBORWatchEvent appends one event of a CBOR watch stream (a CBOR sequence). An
// object shared by several watches is encoded once.
func appendCBORWatchEvent(dst []byte, t watch.EventType, obj runtime.Object) ([]byte, error) {
	var raw []byte
	var err error
	if eo, ok := obj.(*store.EncodedObject); ok {
		raw = eo.Raw
	} else if so, ok := obj.(*store.SharedObject); ok {
		raw, err = so.Encoded("cbor", func(u *unstructured.Unstructured) ([]byte, error) { return respond.EncodeCBOR(u) })
	} else {
		raw, err = respond.EncodeCBOR(obj)
	}
	if err != nil {
		return dst, err
	}
	return respond.AppendCBORWatchEvent(dst, string(t), raw), nil
}

// watchObject renders an event's object in the negotiated representation.
func (s *Server) watchObject(r *http.Request, q *apiRequest, ev watch.Event, columnsSent *bool) (runtime.Object, error) {
	if st, ok := ev.Object.(*metav1.Status); ok {
		st.Kind, st.APIVersion = "Status", "v1"
		return st, nil
	}
	u, ok := ev.Object.(*unstructured.Unstructured)
	if so, shared := ev.Object.(*store.SharedObject); shared {
		if q.out.Output != respond.OutputTable && q.out.Output != respond.OutputMetadata {
			return so, nil // encoded once for every watch that sends it
		}
		u, ok = so.Unstructured, true
	}
	if !ok || ev.Type == watch.Error {
		return ev.Object, nil
	}
	switch q.out.Output {
	case respond.OutputTable:
		// Bookmarks too are Tables, of one row whose object carries their metadata (the
		// end of the initial events of a watch list is in its annotations), as
		// Kubernetes sends them: a reflector cannot take Tables for objects.
		t, err := s.table(r, q, []unstructured.Unstructured{*u}, &metav1.ListMeta{ResourceVersion: u.GetResourceVersion()})
		if err != nil {
			return nil, err
		}
		if *columnsSent {
			t.ColumnDefinitions = nil
		}
		*columnsSent = true
		return t, nil
	case respond.OutputMetadata:
		return toPartial(u), nil
	}
	return u, nil
}

// refuseWatchList refuses a watch that sets sendInitialEvents, in Kubernetes' words
// for a server whose WatchList feature gate is off (apimachinery's
