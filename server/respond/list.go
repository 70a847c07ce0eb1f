package respond

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"

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
// EncodeItem encoded its items (YAML answers are written by Object).
func List(w http.ResponseWriter, r *http.Request, n Negotiation, l *EncodedList) {
	var body []byte
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
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// jsonList assembles the JSON of a list from its items' JSON.
func jsonList(l *EncodedList) ([]byte, error) {
	size := 128
	for _, it := range l.Items {
		size += len(it) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, `{"apiVersion":`...)
	b, _ = AppendJSON(b, l.APIVersion)
	b = append(b, `,"items":[`...)
	for i, it := range l.Items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, `],"kind":`...)
	b, _ = AppendJSON(b, l.Kind)
	meta, err := json.Marshal(l.Meta)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"metadata":`...)
	b = append(b, meta...)
	return append(b, "}\n"...), nil
}

// protobufList assembles the protobuf envelope of a list from its items' messages:
// every Kubernetes list message has its ListMeta as field 1 and its items as field 2.
func protobufList(l *EncodedList) ([]byte, error) {
	meta, err := l.Meta.Marshal()
	if err != nil {
		return nil, err
	}
	size := len(meta) + binary.MaxVarintLen64 + 1
	for _, it := range l.Items {
		size += len(it) + binary.MaxVarintLen64 + 1
	}
	msg := make([]byte, 0, size)
	msg = appendField(msg, 1, meta)
	for _, it := range l.Items {
		msg = appendField(msg, 2, it)
	}
	return ProtobufEnvelope(l.APIVersion, l.Kind, msg)
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
	return append([]byte{'k', '8', 's', 0}, env...), nil
}

// appendField appends a length-delimited protobuf field.
func appendField(b []byte, field int, data []byte) []byte {
	b = binary.AppendUvarint(b, uint64(field<<3|2)) //nolint:gosec // field numbers are 1 and 2
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}
