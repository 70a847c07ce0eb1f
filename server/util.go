package server

import (
	"context"
	"encoding/json"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
)

type ctxT = context.Context

// jsonPathFields splits a simple JSONPath like ".spec.replicas" into its fields.
func jsonPathFields(p string) []string {
	return strings.Split(strings.TrimPrefix(p, "."), ".")
}

func fromUnstructured(m map[string]interface{}, into interface{}) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}

func runtimeToUnstructured(obj interface{}) (map[string]interface{}, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
}

func kjsonMarshal(v interface{}) ([]byte, error) { return json.Marshal(v) }

func decodeStrictJSON(data []byte, into interface{}) error {
	strict, err := kjson.UnmarshalStrict(data, into, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		return strict[0]
	}
	return nil
}

func apiextensionsColumn(name, typ, path string) apiextensionsv1.CustomResourceColumnDefinition {
	return apiextensionsv1.CustomResourceColumnDefinition{Name: name, Type: typ, JSONPath: path,
		Description: "CreationTimestamp is a timestamp representing the server time when this object was created."}
}
func ptrTo[T any](v T) *T { return &v }
