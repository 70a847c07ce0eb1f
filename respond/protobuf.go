package respond

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/concordproject/concord/typedconv"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1beta1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1beta1"
)

// ProtobufMediaType is Kubernetes' protobuf encoding, which typed clients ask for.
const ProtobufMediaType = "application/vnd.kubernetes.protobuf"

// TypedScheme holds the Go types of the built-in kinds clients know: client-go's,
// apiextensions.k8s.io's and apiregistration.k8s.io's. Kinds it knows are answered in protobuf to clients that ask;
// it also decodes the protobuf bodies typed clients send.
var TypedScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(apiregistrationv1.AddToScheme(s))
	utilruntime.Must(apiregistrationv1beta1.AddToScheme(s))
	return s
}()

// Protobuf is the protobuf serializer of TypedScheme's kinds.
var Protobuf = protobuf.NewSerializer(TypedScheme, TypedScheme)

// ProtobufKind reports whether objects of gvk can be answered in protobuf: Kubernetes
// defines a protobuf form for its built-in kinds, never for custom resources. The
// answer for a kind is found once (it makes an object of the kind) and kept.
func ProtobufKind(gvk schema.GroupVersionKind) bool {
	if !TypedScheme.Recognizes(gvk) {
		return false
	}
	if v, ok := protobufKinds.Load(gvk); ok {
		b, _ := v.(bool)
		return b
	}
	obj, err := TypedScheme.New(gvk)
	_, ok := obj.(protobufMarshaler)
	ok = ok && err == nil
	protobufKinds.Store(gvk, ok)
	return ok
}

// protobufKinds keeps ProtobufKind's answers for the kinds TypedScheme recognizes.
var protobufKinds sync.Map

type protobufMarshaler interface {
	Marshal() ([]byte, error)
}

// canProtobuf reports whether v has a protobuf form.
func canProtobuf(v interface{}) bool {
	switch o := v.(type) {
	case *unstructured.Unstructured:
		return ProtobufKind(o.GroupVersionKind())
	case *unstructured.UnstructuredList:
		return ProtobufKind(o.GroupVersionKind())
	case runtime.Object:
		_, ok := o.(protobufMarshaler)
		return ok
	}
	return false
}

// typed returns v as the Go type of its kind, ready for the protobuf serializer.
func typed(v interface{}) (runtime.Object, error) {
	var (
		content map[string]interface{}
		gvk     schema.GroupVersionKind
	)
	switch o := v.(type) {
	case *unstructured.Unstructured:
		content, gvk = o.Object, o.GroupVersionKind()
	case *unstructured.UnstructuredList:
		content, gvk = jsonValue(o).(map[string]interface{}), o.GroupVersionKind()
	case runtime.Object:
		return o, nil
	default:
		return nil, fmt.Errorf("%T has no protobuf form", v)
	}
	obj, err := TypedScheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := typedconv.FromUnstructured(content, obj); err != nil {
		return nil, fmt.Errorf("%s as its Go type: %w", gvk, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// AppendProtobuf appends the protobuf envelope of v (a built-in kind, unstructured or
// typed) to dst.
func AppendProtobuf(dst []byte, v interface{}) ([]byte, error) {
	obj, err := typed(v)
	if err != nil {
		return dst, err
	}
	buf := &appendWriter{b: dst}
	err = Protobuf.Encode(obj, buf)
	return buf.b, err
}

// AppendProtobufWatchEvent appends one frame of a protobuf watch stream: the length
// (4 bytes, big-endian) of a metav1.WatchEvent whose object is v's protobuf envelope.
func AppendProtobufWatchEvent(dst []byte, t watch.EventType, v runtime.Object) ([]byte, error) {
	raw, err := AppendProtobuf(nil, v)
	if err != nil {
		return dst, err
	}
	return AppendProtobufWatchFrame(dst, t, raw)
}

// AppendProtobufWatchFrame appends one frame of a protobuf watch stream whose object
// is raw, an object's protobuf envelope (AppendProtobuf's).
func AppendProtobufWatchFrame(dst []byte, t watch.EventType, raw []byte) ([]byte, error) {
	ev := metav1.WatchEvent{Type: string(t), Object: runtime.RawExtension{Raw: raw}}
	n := ev.Size()
	dst = binary.BigEndian.AppendUint32(dst, uint32(n)) //nolint:gosec // an event is far below 4 GiB
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	_, err := ev.MarshalToSizedBuffer(dst[start:])
	return dst, err
}

type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
