package server

import (
	"encoding/json"
	"fmt"

	"github.com/concordproject/concord/respond"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// parameterCodec decodes query parameters into metav1 option types.
var parameterCodec = func() runtime.ParameterCodec {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	return runtime.NewParameterCodec(scheme)
}()

// typedScheme holds the Go types of the built-in kinds clients know. It decodes the
// protobuf bodies typed clients send and gives strategic merge patches their patch
// strategies.
var typedScheme = respond.TypedScheme

// protobufSerializer reads request bodies that client-go sends as protobuf: objects
// of the built-in kinds it knows and DeleteOptions.
var protobufSerializer = respond.Protobuf

const protobufMediaType = respond.ProtobufMediaType

// protobufToMap decodes a Kubernetes protobuf envelope into an unstructured map.
func protobufToMap(data []byte) (map[string]interface{}, error) {
	obj, gvk, err := protobufSerializer.Decode(data, nil, nil)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the protobuf body cannot be decoded: %v", err))
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the protobuf body cannot be converted: %v", err))
	}
	u["apiVersion"], u["kind"] = gvk.GroupVersion().String(), gvk.Kind
	return u, nil
}

// protobufToJSON decodes a Kubernetes protobuf envelope into JSON.
func protobufToJSON(data []byte) ([]byte, error) {
	u, err := protobufToMap(data)
	if err != nil {
		return nil, err
	}
	return json.Marshal(u)
}

// optionsGV is the group-version query parameters are decoded in.
var optionsGV = schema.GroupVersion{Version: "v1"}
