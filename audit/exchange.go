package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/concordproject/concord/request"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditlib "k8s.io/apiserver/pkg/audit"
)

// maxStatusBytes bounds what is kept of a failure's body to read its Status from.
const maxStatusBytes = 64 << 10

// exchange is the auditing of one request the policy audits.
type exchange struct {
	ctx context.Context
	ac  *auditlib.AuditContext

	level             auditinternal.Level
	omitManagedFields bool
	// longRunning requests (watches) have a ResponseStarted event.
	longRunning bool
	verb        string
	gvr         schema.GroupVersionResource
	subresource string

	// body records the request body as the handler reads it; nil when not recorded.
	body       *bodyRecorder
	bodyLogged bool
	writer     *responseWriter
}

func newExchange(ctx context.Context, rac auditlib.RequestAuditConfig, info *request.Info) *exchange {
	return &exchange{
		ctx:               ctx,
		ac:                auditlib.AuditContextFrom(ctx),
		level:             rac.Level,
		omitManagedFields: rac.OmitManagedFields,
		longRunning:       info.Verb == "watch",
		verb:              info.Verb,
		gvr:               schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource},
		subresource:       info.Subresource,
	}
}

// recordBody has the request body recorded as the handler reads it, when it is JSON
// (or YAML, as server-side apply sends) and the event may need it: as the
// requestObject (level Request and more), or for the name, UID and resourceVersion
// of a created or updated object in objectRef.
func (ex *exchange) recordBody(r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	if ex.level.Less(auditinternal.LevelRequest) && ex.verb != "create" && ex.verb != "update" {
		return
	}
	mt := mediaType(r.Header.Get("Content-Type"))
	if !isJSON(mt) && !isYAML(mt) && mt != protobufMediaType {
		return
	}
	ex.body = &bodyRecorder{ReadCloser: r.Body, yaml: isYAML(mt), protobuf: mt == protobufMediaType, length: r.ContentLength}
	r.Body = ex.body
}

// wrap returns the writer the handler answers through. recordResponse keeps what the
// event may need of the body: failures' Status, and at level RequestResponse the
// responseObject.
func (ex *exchange) wrap(w http.ResponseWriter, recordResponse bool) http.ResponseWriter {
	ex.writer = &responseWriter{ResponseWriter: w, ex: ex, record: recordResponse}
	return ex.writer
}

// started is called once, when the response starts.
func (ex *exchange) started(code int) {
	ex.ac.SetEventResponseStatusCode(int32(code))
	if ex.longRunning {
		ex.logRequest()
		ex.ac.ProcessEventStage(ex.ctx, auditinternal.StageResponseStarted)
	}
}

// complete sends the ResponseComplete event, with what the bodies gave.
func (ex *exchange) complete() {
	ex.logRequest()
	ex.logResponse()
	if ex.ac.GetEventResponseStatus() == nil {
		// The handler wrote nothing: net/http answers 200 with no body.
		ex.ac.SetEventResponseStatus(&metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusOK, Message: "no response was written"})
		if ex.longRunning {
			ex.ac.ProcessEventStage(ex.ctx, auditinternal.StageResponseStarted)
		}
	}
	ex.ac.ProcessEventStage(ex.ctx, auditinternal.StageResponseComplete)
}

// panicked sends the Panic event.
func (ex *exchange) panicked(p any) {
	ex.logRequest()
	ex.ac.SetEventResponseStatus(&metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusInternalServerError,
		Reason:  metav1.StatusReasonInternalError,
		Message: fmt.Sprintf("the handler panicked: %v", p),
	})
	ex.ac.ProcessEventStage(ex.ctx, auditinternal.StagePanic)
}

// logRequest puts what the request body says into the event, once the handler has
// read all of it: the objectRef's missing name, namespace, UID and resourceVersion
// for creations and updates, and the body as requestObject at level Request and more.
func (ex *exchange) logRequest() {
	if ex.body == nil || ex.bodyLogged {
		return
	}
	ex.bodyLogged = true
	raw := ex.body.json()
	if raw == nil {
		return
	}
	if ex.verb == "create" || ex.verb == "update" {
		ex.logObjectMeta(raw)
	}
	if ex.level.GreaterOrEqual(auditinternal.LevelRequest) {
		if ex.omitManagedFields {
			raw = withoutManagedFields(raw)
		}
		auditlib.LogRequestPatch(ex.ctx, raw)
	}
}

// metaCodecs encodes the PartialObjectMetadata logObjectMeta hands the library.
var metaCodecs = func() runtime.NegotiatedSerializer {
	scheme := runtime.NewScheme()
	utilruntime.Must(metav1.AddMetaToScheme(scheme))
	return newCodecFactory(scheme)
}()

// logObjectMeta completes the objectRef from the object's metadata, through the
// library's LogRequestObject (the one way to set it).
func (ex *exchange) logObjectMeta(raw []byte) {
	var obj struct {
		Metadata struct {
			Name            string    `json:"name"`
			Namespace       string    `json:"namespace"`
			UID             types.UID `json:"uid"`
			ResourceVersion string    `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return
	}
	m := obj.Metadata
	meta := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
	}}
	auditlib.LogRequestObject(ex.ctx, meta, metav1.SchemeGroupVersion, ex.gvr, ex.subresource, metaCodecs)
}

// logResponse puts what the response body says into the event: the Status of an
// answer that is one (failures), and at level RequestResponse the JSON body as
// responseObject (watches excepted).
func (ex *exchange) logResponse() {
	rw := ex.writer
	if rw == nil || !rw.capture || rw.overflow || rw.body.Len() == 0 {
		return
	}
	body := bytes.TrimSpace(rw.body.Bytes())
	status := decodeStatus(rw.contentType, body)
	var obj *runtime.Unknown
	if rw.contentType == protobufMediaType && status == nil {
		body = protobufToJSON(rw.body.Bytes()) // nil when unreadable
	}
	if ex.level.GreaterOrEqual(auditinternal.LevelRequestResponse) && !ex.longRunning && (isJSON(rw.contentType) || rw.contentType == protobufMediaType) && json.Valid(body) {
		if ex.omitManagedFields {
			body = withoutManagedFields(body)
		}
		obj = &runtime.Unknown{Raw: body, ContentType: runtime.ContentTypeJSON}
	}
	if status == nil && obj == nil {
		return
	}
	ex.ac.LogResponseObject(status, obj)
	ex.ac.SetEventResponseStatusCode(int32(rw.code))
}

// captures says whether a response with this code and media type is kept, and how
// much of it (0: all).
func (ex *exchange) captures(code int, mt string) (bool, int) {
	if ex.level.GreaterOrEqual(auditinternal.LevelRequestResponse) && !ex.longRunning && (isJSON(mt) || mt == protobufMediaType) {
		return true, 0
	}
	if code >= http.StatusBadRequest && (isJSON(mt) || isYAML(mt) || mt == protobufMediaType) {
		return true, maxStatusBytes
	}
	return false, 0
}

// responseWriter notes when the response starts and keeps what the event needs of
// its body.
type responseWriter struct {
	http.ResponseWriter
	ex     *exchange
	record bool
	once   sync.Once

	code        int
	contentType string
	capture     bool
	limit       int // 0: none
	overflow    bool
	body        bytes.Buffer
}

func (rw *responseWriter) start(code int) {
	rw.once.Do(func() {
		rw.code = code
		rw.contentType = mediaType(rw.Header().Get("Content-Type"))
		if rw.record {
			rw.capture, rw.limit = rw.ex.captures(code, rw.contentType)
		}
		rw.ex.started(code)
	})
}

func (rw *responseWriter) WriteHeader(code int) {
	// Informational answers (100 Continue, 103 Early Hints) precede the response.
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		rw.ResponseWriter.WriteHeader(code)
		return
	}
	rw.start(code)
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *responseWriter) Write(b []byte) (int, error) {
	rw.start(http.StatusOK)
	n, err := rw.ResponseWriter.Write(b)
	if rw.capture && !rw.overflow {
		if rw.limit > 0 && rw.body.Len()+n > rw.limit {
			rw.overflow = true
			rw.body = bytes.Buffer{}
		} else {
			rw.body.Write(b[:n])
		}
	}
	return n, err
}

// FlushError flushes what was written (http.ResponseController calls it); the
// response has started then.
func (rw *responseWriter) FlushError() error {
	rw.start(http.StatusOK)
	return http.NewResponseController(rw.ResponseWriter).Flush()
}

// Flush is FlushError for handlers that use http.Flusher.
func (rw *responseWriter) Flush() { _ = rw.FlushError() }

// Hijack hands the connection over (protocol upgrades): the response has started,
// as 101 Switching Protocols.
func (rw *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	rw.start(http.StatusSwitchingProtocols)
	return http.NewResponseController(rw.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (rw *responseWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// bodyRecorder keeps a copy of what is read from a request body.
type bodyRecorder struct {
	io.ReadCloser
	// yaml and protobuf say what the body is, when not JSON: it is converted.
	yaml, protobuf bool
	length         int64 // Content-Length; -1 unknown
	eof            bool
	buf            bytes.Buffer
}

func (b *bodyRecorder) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.buf.Write(p[:n])
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	return n, err
}

// json returns the body as JSON (YAML converted), or nil if it was not read to its
// end or is not valid.
func (b *bodyRecorder) json() []byte {
	if !b.eof && (b.length <= 0 || int64(b.buf.Len()) != b.length) {
		return nil
	}
	raw := bytes.TrimSpace(b.buf.Bytes())
	if b.protobuf {
		return protobufToJSON(b.buf.Bytes())
	}
	if b.yaml {
		j, err := yamlToJSON(raw)
		if err != nil {
			return nil
		}
		raw = j
	}
	if len(raw) == 0 || !json.Valid(raw) {
		return nil
	}
	return raw
}
