package respond

import (
	"context"
	"encoding/binary"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
)

// CBOR (RFC 8949) is the representation KEP-4222 adds for objects that have no
// protobuf form: client-go's dynamic client accepts it when its ClientsAllowCBOR
// feature is on. Values are encoded as apimachinery's CBOR serializer does (its
// direct package); a whole answer starts with the self-described CBOR tag, as that
// serializer writes it, and a watch is a CBOR sequence of such events.
const (
	CBORMediaType    = "application/cbor"
	CBORSeqMediaType = "application/cbor-seq"
)

type cborKey struct{}

// WithCBOR returns ctx of a request the server may answer in CBOR: Negotiate offers
// CBOR only then, as kube-apiserver serves it only while its CBORServingAndStorage
// feature gate is on.
func WithCBOR(ctx context.Context) context.Context { return context.WithValue(ctx, cborKey{}, true) }

// cborServed reports whether the request's server serves CBOR (WithCBOR).
func cborServed(ctx context.Context) bool {
	on, _ := ctx.Value(cborKey{}).(bool)
	return on
}

// selfDescribed is tag 55799, which marks the data item after it as CBOR.
var selfDescribed = []byte{0xd9, 0xd9, 0xf7}

// CBOR major types used to assemble lists and watch events around encoded items.
// Strings are byte strings, as apimachinery's serializer writes them (no UTF-8
// validation on either end).
const (
	cborBytes = 2
	cborArray = 4
	cborMap   = 5
)

// AppendCBOR appends the CBOR of v, as a whole answer (self-described): unstructured
// objects and lists from their content, everything else as its JSON field names say.
func AppendCBOR(dst []byte, v any) ([]byte, error) {
	b, err := EncodeCBOR(v)
	if err != nil {
		return dst, err
	}
	return append(append(dst, selfDescribed...), b...), nil
}

// EncodeCBOR encodes v with no tag, as an item of a list or the object of a watch
// event: unstructured objects from their content.
func EncodeCBOR(v any) ([]byte, error) {
	b, err := direct.Marshal(jsonValue(v))
	if err != nil {
		return nil, fmt.Errorf("encoding CBOR: %w", err)
	}
	return b, nil
}

// appendCBORHead appends the head of a data item of major type major and argument n
// (a length, or a count of items or pairs).
func appendCBORHead(b []byte, major byte, n uint64) []byte {
	m := major << 5
	switch {
	case n < 24:
		return append(b, m|byte(n))
	case n <= 0xff:
		return append(b, m|24, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, m|25), uint16(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, m|26), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, m|27), n)
}

func appendCBORString(b []byte, s string) []byte {
	return append(appendCBORHead(b, cborBytes, uint64(len(s))), s...)
}

// cborList is the CBOR of a list made of its items' CBOR.
func cborList(l *EncodedList) (*listBody, error) {
	meta, err := direct.Marshal(l.Meta)
	if err != nil {
		return nil, fmt.Errorf("encoding CBOR: %w", err)
	}
	head := appendCBORHead(append([]byte(nil), selfDescribed...), cborMap, 4)
	head = appendCBORString(appendCBORString(head, "apiVersion"), l.APIVersion)
	head = appendCBORHead(appendCBORString(head, "items"), cborArray, uint64(len(l.Items)))
	tail := appendCBORString(appendCBORString(nil, "kind"), l.Kind)
	tail = append(appendCBORString(tail, "metadata"), meta...)
	body := newListBody(l.Items, nil)
	body.head, body.tail = head, tail
	return body, nil
}

// AppendCBORWatchEvent appends one event of a CBOR watch stream: a self-described
// metav1.WatchEvent whose object is obj, CBOR encoded (with no tag of its own).
func AppendCBORWatchEvent(dst []byte, eventType string, obj []byte) []byte {
	dst = appendCBORHead(append(dst, selfDescribed...), cborMap, 2)
	dst = appendCBORString(appendCBORString(dst, "type"), eventType)
	return append(appendCBORString(dst, "object"), obj...)
}
