package respond

import (
	"cmp"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/concordproject/concord/objectjson"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

// Output is the representation a client asked for in Accept.
type Output int

const (
	// OutputObject is the object itself, JSON.
	OutputObject Output = iota
	// OutputTable is a meta.k8s.io/v1 Table.
	OutputTable
	// OutputMetadata is PartialObjectMetadata (List).
	OutputMetadata
)

// Negotiation is the outcome of reading the Accept header.
type Negotiation struct {
	// Output is the representation asked for.
	Output Output
	// YAML is true when the client asked for application/yaml.
	YAML bool
	// Protobuf is true when the answer is Kubernetes' protobuf.
	Protobuf bool
	// CBOR is true when the answer is CBOR (KEP-4222).
	CBOR bool
}

// Negotiate reads Accept: the most preferred media type (highest q, then first
// offered) that the server can answer wins. JSON and YAML are always spoken; protobuf
// (application/vnd.kubernetes.protobuf) for PartialObjectMetadata, and for objects
// when protobufObjects says their kind has a protobuf form (built-in kinds do, custom
// resources do not: a client that offers JSON as well gets JSON, one that accepts only
// protobuf gets 406); CBOR (application/cbor) for the objects of kinds without one,
// as kube-apiserver does for custom resources, if the server serves CBOR (WithCBOR).
// Tables are JSON or YAML only, as in Kubernetes.
func Negotiate(r *http.Request, protobufObjects bool) (Negotiation, error) {
	accept := r.Header.Get("Accept")
	if accept == "" {
		return Negotiation{}, nil
	}
	for _, c := range acceptClauses(accept) {
		switch c.mediaType {
		case "application/json", "*/*", "application/*", "application/yaml", ProtobufMediaType:
		case CBORMediaType:
			if !cborServed(r.Context()) {
				continue
			}
		default:
			continue
		}
		n := Negotiation{YAML: c.mediaType == "application/yaml", Protobuf: c.mediaType == ProtobufMediaType, CBOR: c.mediaType == CBORMediaType}
		switch c.params["as"] {
		case "":
			if (n.Protobuf && !protobufObjects) || (n.CBOR && protobufObjects) {
				continue
			}
		case "Table":
			if !metaGroupVersion(c.params) || n.Protobuf || n.CBOR {
				continue
			}
			n.Output = OutputTable
		case "PartialObjectMetadata", "PartialObjectMetadataList":
			if !metaGroupVersion(c.params) || n.CBOR {
				continue
			}
			n.Output = OutputMetadata
		default:
			continue // an unknown transformation: try the next type
		}
		return n, nil
	}
	return Negotiation{}, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", schema.GroupResource{}, "",
		"only application/json, application/yaml and, for built-in kinds, "+ProtobufMediaType+", for other kinds "+CBORMediaType+
			" are served (optionally as=Table, JSON or YAML only, or as=PartialObjectMetadata with g=meta.k8s.io, v=v1)", 0, false)
}

func metaGroupVersion(params map[string]string) bool {
	return params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1")
}

// acceptClause is one media range of an Accept header.
type acceptClause struct {
	mediaType string
	params    map[string]string
	q         float64
}

// acceptClauses parses an Accept header into its media ranges, most preferred first:
// by q (default 1), ties in the order given; ranges with q=0 or that do not parse are
// left out.
func acceptClauses(accept string) []acceptClause {
	var out []acceptClause
	for part := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil || q < 0 || q > 1 {
				continue
			}
			delete(params, "q")
		}
		if q > 0 {
			out = append(out, acceptClause{mt, params, q})
		}
	}
	slices.SortStableFunc(out, func(a, b acceptClause) int { return cmp.Compare(b.q, a.q) })
	return out
}

// jsonValue returns what to hand encoding/json for v: unstructured objects and lists
// are encoded from their maps directly, not through their MarshalJSON, which encoding/json
// would then validate and compact a second time.
func jsonValue(v interface{}) interface{} {
	switch o := v.(type) {
	case *unstructured.Unstructured:
		return o.Object
	case *unstructured.UnstructuredList:
		m := make(map[string]interface{}, len(o.Object)+1)
		for k, val := range o.Object {
			m[k] = val
		}
		items := make([]interface{}, len(o.Items))
		for i := range o.Items {
			items[i] = o.Items[i].Object
		}
		m["items"] = items
		return m
	}
	return v
}

// AppendJSON appends the JSON of v to dst: unstructured objects and lists from their
// maps directly, everything else as encoding/json would.
func AppendJSON(dst []byte, v interface{}) ([]byte, error) {
	return objectjson.Append(dst, jsonValue(v))
}

// Object writes v with code, as JSON, or as YAML or protobuf if the client asked for
// it and v has that form.
func Object(w http.ResponseWriter, r *http.Request, code int, v interface{}) {
	n, _ := Negotiate(r, canProtobuf(v))
	ctype, body, err := encode(n, v)
	if err != nil {
		Error(w, r, apierrors.NewInternalError(fmt.Errorf("encoding the response: %w", err)))
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}

// Error writes err as a metav1.Status, in the representation the client negotiated
// (JSON when it negotiated nothing this package writes). Errors that are not API
// errors are internal errors (500); their text is kept for the client. A Status with
// RetryAfterSeconds also gets the Retry-After header, which client-go honours.
func Error(w http.ResponseWriter, r *http.Request, err error) {
	status := ErrorToStatus(err)
	// Server errors are logged, but refusals that ask the client to come back (503)
	// and requests the client itself gave up on.
	if status.Code >= 500 && status.Code != http.StatusServiceUnavailable && r.Context().Err() == nil {
		klog.FromContext(r.Context()).Error(err, "Request failed", "method", r.Method, "path", r.URL.Path, "code", status.Code)
	}
	if status.Details != nil && status.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(status.Details.RetryAfterSeconds)))
	}
	n, _ := Negotiate(r, true)
	ctype, body, err := encode(n, status)
	if err != nil {
		ctype, body = "application/json", []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"the error could not be encoded","code":500}`+"\n")
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(status.Code))
	_, _ = w.Write(body)
}

// encode returns v's media type and body in the negotiated representation.
func encode(n Negotiation, v interface{}) (string, []byte, error) {
	if n.CBOR {
		body, err := AppendCBOR(make([]byte, 0, 2048), v)
		return CBORMediaType, body, err
	}
	if n.Protobuf {
		body, err := AppendProtobuf(make([]byte, 0, 2048), v)
		return ProtobufMediaType, body, err
	}
	body, err := AppendJSON(make([]byte, 0, 2048), v)
	if err != nil {
		return "", nil, err
	}
	body = append(body, '\n')
	if n.YAML {
		if y, err := yaml.JSONToYAML(body); err == nil {
			return "application/yaml", y, nil
		}
	}
	return "application/json", body, nil
}

// ErrorToStatus returns the Status for err, with kind and apiVersion set. An error
// that is no Status is answered as kube-apiserver answers one: 500, its text as
// the message, no reason.
func ErrorToStatus(err error) *metav1.Status {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		st = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
			Code: http.StatusInternalServerError, Reason: metav1.StatusReasonUnknown, Message: err.Error()}}
	}
	status := st.Status()
	status.Kind, status.APIVersion = "Status", "v1"
	if status.Status == "" {
		status.Status = metav1.StatusFailure
	}
	if status.Code == 0 {
		status.Code = http.StatusInternalServerError
	}
	return &status
}
