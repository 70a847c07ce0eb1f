package audit

import (
	"bytes"
	"encoding/json"
	"mime"
	"strings"

	"github.com/concordproject/concord/respond"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"sigs.k8s.io/yaml"
)

const protobufMediaType = respond.ProtobufMediaType

// protobufMagic starts Kubernetes' protobuf envelope (a runtime.Unknown).
var protobufMagic = []byte("k8s\x00")

// mediaType is the media type of a Content-Type header, lower-case, without
// parameters; "" if there is none.
func mediaType(contentType string) string {
	if contentType == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return mt
}

// isJSON: application/json, and the patch types (application/merge-patch+json, ...).
func isJSON(mt string) bool { return mt == "application/json" || strings.HasSuffix(mt, "+json") }

// isYAML: application/yaml, and server-side apply's application/apply-patch+yaml.
func isYAML(mt string) bool { return mt == "application/yaml" || strings.HasSuffix(mt, "+yaml") }

func yamlToJSON(b []byte) ([]byte, error) { return yaml.YAMLToJSON(b) }

// protobufSerializer reads the protobuf of the kinds client-go knows.
var protobufSerializer = protobuf.NewSerializer(respond.TypedScheme, respond.TypedScheme)

// protobufToJSON returns a protobuf body (a built-in kind in Kubernetes' envelope) as
// JSON, with its apiVersion and kind; nil if it cannot be read.
func protobufToJSON(body []byte) []byte {
	obj, gvk, err := protobufSerializer.Decode(body, nil, nil)
	if err != nil || gvk == nil {
		return nil
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	j, err := json.Marshal(obj)
	if err != nil {
		return nil
	}
	return j
}

func newCodecFactory(scheme *runtime.Scheme) runtime.NegotiatedSerializer {
	return serializer.NewCodecFactory(scheme).WithoutConversion()
}

// decodeStatus returns the metav1.Status a response body holds, in JSON, YAML or
// protobuf; nil if it holds something else.
func decodeStatus(mt string, body []byte) *metav1.Status {
	switch {
	case mt == protobufMediaType:
		return protobufStatus(body)
	case isYAML(mt):
		j, err := yaml.YAMLToJSON(body)
		if err != nil {
			return nil
		}
		body = j
	case !isJSON(mt):
		return nil
	}
	var st metav1.Status
	if json.Unmarshal(body, &st) != nil || st.Kind != "Status" {
		return nil
	}
	return &st
}

func protobufStatus(body []byte) *metav1.Status {
	rest, ok := bytes.CutPrefix(body, protobufMagic)
	if !ok {
		return nil
	}
	var u runtime.Unknown
	if u.Unmarshal(rest) != nil || u.Kind != "Status" {
		return nil
	}
	var st metav1.Status
	if st.Unmarshal(u.Raw) != nil {
		return nil
	}
	return &st
}

// withoutManagedFields drops metadata.managedFields from an object, the items of a
// list and the objects of a Table's rows (the policy's omitManagedFields). raw is
// returned as it is when there are none, or it is not a JSON object.
func withoutManagedFields(raw []byte) []byte {
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers as they were
	if dec.Decode(&obj) != nil {
		return raw
	}
	changed := dropManagedFields(obj)
	if items, ok := obj["items"].([]any); ok {
		for _, item := range items {
			if m, ok := item.(map[string]any); ok && dropManagedFields(m) {
				changed = true
			}
		}
	}
	if rows, ok := obj["rows"].([]any); ok {
		for _, row := range rows {
			r, _ := row.(map[string]any)
			if m, ok := r["object"].(map[string]any); ok && dropManagedFields(m) {
				changed = true
			}
		}
	}
	if !changed {
		return raw
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return raw
	}
	return out
}

func dropManagedFields(obj map[string]any) bool {
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return false
	}
	if _, ok := meta["managedFields"]; !ok {
		return false
	}
	delete(meta, "managedFields")
	return true
}
