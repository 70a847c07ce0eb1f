package respond

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// EncodedList is a list whose items are encoded already, each by EncodeItem in the
// representation the list is answered in: a list can then be answered from encodings
// kept between requests (a watch cache's) without encoding its objects again.
type EncodedList struct {
	APIVersion, Kind string
	Meta             metav1.ListMeta
	Items            [][]byte
}

// ItemFormat names the representation EncodeItem produces for n ("json", "protobuf"
// or "cbor"): lists answered in one format share their items' encodings.
func ItemFormat(n Negotiation) string {
	switch {
	case n.Protobuf:
		return "protobuf"
	case n.CBOR:
		return "cbor"
	}
	return "json"
}

// EncodeItem encodes one list item for a list answered as n: its JSON, its CBOR, or
// its protobuf message (the Go type of its kind, without the envelope a whole object
// gets).
func EncodeItem(n Negotiation, u *unstructured.Unstructured) ([]byte, error) {
	if n.CBOR {
		return EncodeCBOR(u)
	}
	if !n.Protobuf {
		return AppendJSON(nil, u)
	}
	obj, err := typed(u)
	if err != nil {
		return nil, err
	}
	m, ok := obj.(protobufMarshaler)
	if !ok {
		return nil, fmt.Errorf("%s has no protobuf form", u.GroupVersionKind())
	}
	return m.Marshal()
}

// Kubernetes writes the JSON items of a built-in kind's list without apiVersion and
// kind (its typed lists' items have none: clients decode them as the list's), while
// watch events and the items of custom resources carry both.
const jsonListItemFormat = "json-list-item"

// ListItemFormat is ItemFormat for the items of a list of a built-in kind (builtin)
// or not.
func ListItemFormat(n Negotiation, builtin bool) string {
	if f := ItemFormat(n); f != "json" || !builtin {
		return f
	}
	return jsonListItemFormat
}

// EncodeListItem is EncodeItem for the items of a list of a built-in kind (builtin) or
// not: JSON items of built-in kinds have no apiVersion and kind.
func EncodeListItem(n Negotiation, builtin bool, u *unstructured.Unstructured) ([]byte, error) {
	if ListItemFormat(n, builtin) != jsonListItemFormat {
		return EncodeItem(n, u)
	}
	m := make(map[string]interface{}, len(u.Object))
	for k, v := range u.Object {
		if k != "apiVersion" && k != "kind" {
			m[k] = v
		}
	}
	return AppendJSON(nil, m)
}

// List writes l with code 200 in the representation n, JSON, CBOR or protobuf, as
// EncodeItem encoded its items (YAML answers are written by Object). The body is
// written from the items' encodings as they are, never assembled in one buffer: a
// page of a list was copied three times over (the list, its envelope, the envelope's
// marshaling), and collecting those copies was half of the server's CPU while it
// answered lists.
func List(w http.ResponseWriter, r *http.Request, n Negotiation, l *EncodedList) {
	var body *listBody
	var err error
	ctype := "application/json"
	switch {
	case n.Protobuf:
		ctype = ProtobufMediaType
		body, err = protobufList(l)
	case n.CBOR:
		ctype = CBORMediaType
		body, err = cborList(l)
	default:
		body, err = jsonList(l)
	}
	if err != nil {
		Error(w, r, err)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Length", strconv.Itoa(body.size()))
	w.WriteHeader(http.StatusOK)
	_ = body.writeTo(w)
}

// protobufMagic begins every protobuf answer of a Kubernetes server.
var protobufMagic = []byte{'k', '8', 's', 0}

// listBody is the body of a list answer in pieces: what precedes the items, each
// item's kept encoding with what goes before it (a separator, a field's tag and
// length), and what follows them.
type listBody struct {
	head, tail []byte
	items      [][]byte
	// prefix appends what goes before item i; nil when nothing does.
	prefix func(dst []byte, i int, item []byte) []byte
	// itemsLen is the size of the items with their prefixes.
	itemsLen int
}

// newListBody returns the body of items, each after what prefix appends for it
// (nil: nothing), its size measured once; head and tail are the caller's to set.
func newListBody(items [][]byte, prefix func(dst []byte, i int, item []byte) []byte) *listBody {
	b := &listBody{items: items, prefix: prefix}
	var scratch [binary.MaxVarintLen64 + 1]byte
	for i, it := range items {
		if prefix != nil {
			b.itemsLen += len(prefix(scratch[:0], i, it))
		}
		b.itemsLen += len(it)
	}
	return b
}

func (b *listBody) size() int { return len(b.head) + b.itemsLen + len(b.tail) }

// listWriters buffer the pieces of list bodies on their way to a response, so that
// the response writer sees large writes.
var listWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 64<<10) }}

// writeTo writes the body to w.
func (b *listBody) writeTo(w io.Writer) error {
	bw, _ := listWriters.Get().(*bufio.Writer)
	bw.Reset(w)
	defer func() {
		bw.Reset(nil)
		listWriters.Put(bw)
	}()
	var scratch [binary.MaxVarintLen64 + 1]byte
	_, _ = bw.Write(b.head)
	for i, it := range b.items {
		if b.prefix != nil {
			_, _ = bw.Write(b.prefix(scratch[:0], i, it))
		}
		_, _ = bw.Write(it)
	}
	_, _ = bw.Write(b.tail)
	return bw.Flush()
}

// jsonList is the JSON of a list made of its items' JSON.
func jsonList(l *EncodedList) (*listBody, error) {
	head, _ := AppendJSON([]byte(`{"apiVersion":`), l.APIVersion)
	head = append(head, `,"items":[`...)
	tail := append([]byte(nil), `],"kind":`...)
	tail, _ = AppendJSON(tail, l.Kind)
	meta, err := json.Marshal(l.Meta)
	if err != nil {
		return nil, err
	}
	tail = append(tail, `,"metadata":`...)
	tail = append(append(tail, meta...), "}\n"...)
	body := newListBody(l.Items, jsonSeparator)
	body.head, body.tail = head, tail
	return body, nil
}

func jsonSeparator(dst []byte, i int, _ []byte) []byte {
	if i == 0 {
		return dst
	}
	return append(dst, ',')
}

// protobufList is the protobuf envelope of a list made of its items' messages: every
// Kubernetes list message has its ListMeta as field 1 and its items as field 2, and
// the envelope (runtime.Unknown after the magic number) has the list's type as field
// 1, the list's message as field 2, and its (empty) content encoding and type as
// fields 3 and 4, which it always writes.
func protobufList(l *EncodedList) (*listBody, error) {
	gv, err := schema.ParseGroupVersion(l.APIVersion)
	if err != nil {
		return nil, err
	}
	tm := runtime.TypeMeta{APIVersion: gv.String(), Kind: l.Kind}
	typeMeta, err := tm.Marshal()
	if err != nil {
		return nil, err
	}
	meta, err := l.Meta.Marshal()
	if err != nil {
		return nil, err
	}
	body := newListBody(l.Items, protobufItemTag)
	msg := appendField(nil, 1, meta)
	head := appendField(append([]byte(nil), protobufMagic...), 1, typeMeta)
	head = binary.AppendUvarint(head, 2<<3|2)
	head = binary.AppendUvarint(head, uint64(len(msg)+body.itemsLen)) //nolint:gosec // a size
	body.head = append(head, msg...)
	body.tail = []byte{3<<3 | 2, 0, 4<<3 | 2, 0}
	return body, nil
}

func protobufItemTag(dst []byte, _ int, item []byte) []byte {
	dst = binary.AppendUvarint(dst, 2<<3|2)
	return binary.AppendUvarint(dst, uint64(len(item)))
}

// ProtobufEnvelope wraps msg, the protobuf message of an object or list of kind
// apiVersion/kind, in the envelope a whole answer has (AppendProtobuf's).
func ProtobufEnvelope(apiVersion, kind string, msg []byte) ([]byte, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: gv.String(), Kind: kind}, Raw: msg}
	env, err := unk.Marshal()
	if err != nil {
		return nil, err
	}
	return append(append([]byte(nil), protobufMagic...), env...), nil
}

// appendField appends a length-delimited protobuf field.
func appendField(b []byte, field int, data []byte) []byte {
	b = binary.AppendUvarint(b, uint64(field<<3|2)) //nolint:gosec // field numbers are 1 and 2
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}
