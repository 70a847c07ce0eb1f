package bench

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/concordproject/concord/objectjson"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// BenchmarkCustomResourceCodecs measures whether CBOR (KEP-4222) pays for custom
// resources: for a list of 500 objects of two shapes (the 1 KiB objects of the other
// benchmarks, one long string; and a structured object of about 3 KiB with the fields
// of a pod template, many short keys and values), it times the codecs the two sides
// would run: the client's decoding of a list and of one object with client-go's
// dynamic-client serializers (UnstructuredJSONScheme for JSON; apimachinery's CBOR
// serializer), and the server's encoding of the list (objectjson for JSON, as Concord
// does; the CBOR serializer). It starts no process:
//
//	go test ./test/bench -run '^$' -bench CustomResourceCodecs -benchmem
func BenchmarkCustomResourceCodecs(b *testing.B) {
	const items = 500
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	cborSerializer := cbor.NewSerializer(scheme, scheme)
	for _, shape := range []struct {
		name string
		obj  func(i int) map[string]any
	}{
		{"payload-1KiB", payloadObject},
		{"structured", structuredObject},
	} {
		list := &unstructured.UnstructuredList{Object: map[string]any{
			"apiVersion": "bench.example.com/v1", "kind": "WidgetList",
			"metadata": map[string]any{"resourceVersion": "123456"},
		}}
		for i := range items {
			list.Items = append(list.Items, unstructured.Unstructured{Object: shape.obj(i)})
		}
		jsonList, err := objectjson.Append(nil, list.UnstructuredContent())
		if err != nil {
			b.Fatal(err)
		}
		var cborList bytes.Buffer
		if err := cborSerializer.Encode(list, &cborList); err != nil {
			b.Fatal(err)
		}
		jsonOne, err := objectjson.Append(nil, list.Items[0].Object)
		if err != nil {
			b.Fatal(err)
		}
		var cborOne bytes.Buffer
		if err := cborSerializer.Encode(&list.Items[0], &cborOne); err != nil {
			b.Fatal(err)
		}
		perItem := func(b *testing.B, size int) {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*items), "ns/object")
			b.ReportMetric(float64(size)/items, "B/object")
		}
		b.Run(shape.name+"/client-decode-list/json", func(b *testing.B) {
			for b.Loop() {
				if _, _, err := unstructured.UnstructuredJSONScheme.Decode(jsonList, nil, &unstructured.UnstructuredList{}); err != nil {
					b.Fatal(err)
				}
			}
			perItem(b, len(jsonList))
		})
		b.Run(shape.name+"/client-decode-list/cbor", func(b *testing.B) {
			for b.Loop() {
				if _, _, err := cborSerializer.Decode(cborList.Bytes(), nil, &unstructured.UnstructuredList{}); err != nil {
					b.Fatal(err)
				}
			}
			perItem(b, cborList.Len())
		})
		b.Run(shape.name+"/client-decode-object/json", func(b *testing.B) {
			for b.Loop() {
				if _, _, err := unstructured.UnstructuredJSONScheme.Decode(jsonOne, nil, &unstructured.Unstructured{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(jsonOne)), "B/object")
		})
		b.Run(shape.name+"/client-decode-object/cbor", func(b *testing.B) {
			for b.Loop() {
				if _, _, err := cborSerializer.Decode(cborOne.Bytes(), nil, &unstructured.Unstructured{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cborOne.Len()), "B/object")
		})
		b.Run(shape.name+"/server-encode-list/json", func(b *testing.B) {
			buf := make([]byte, 0, len(jsonList))
			for b.Loop() {
				var err error
				if buf, err = objectjson.Append(buf[:0], list.UnstructuredContent()); err != nil {
					b.Fatal(err)
				}
			}
			perItem(b, len(buf))
		})
		b.Run(shape.name+"/server-encode-list/cbor", func(b *testing.B) {
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := cborSerializer.Encode(list, &buf); err != nil {
					b.Fatal(err)
				}
			}
			perItem(b, buf.Len())
		})
	}
}

// payloadObject is a custom resource whose spec is one string of about 1 KiB, the
// shape of the other benchmarks' objects.
func payloadObject(i int) map[string]any {
	return map[string]any{
		"apiVersion": "bench.example.com/v1", "kind": "Widget",
		"metadata": map[string]any{
			"name": fmt.Sprintf("w-%08d", i), "namespace": "bench", "uid": fmt.Sprintf("6f1c2e1a-0000-4000-8000-%012d", i),
			"resourceVersion": fmt.Sprint(1000 + i), "generation": int64(1), "creationTimestamp": "2026-11-23T07:00:00Z",
		},
		"spec": map[string]any{"payload": strings.Repeat("x", 760)},
	}
}

// structuredObject is a custom resource whose spec is a pod template: many short keys
// and values, nested maps and lists, numbers and booleans.
func structuredObject(i int) map[string]any {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "frontend", "track": "stable"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "web",
			Containers: []corev1.Container{{
				Name: "web", Image: "registry.example.com/web:1.2.3",
				Args:  []string{"--port=8080", "--log-level=info", "--cache-size=256"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{
					{Name: "MODE", Value: "production"}, {Name: "REGION", Value: "eu-west-1"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
					PeriodSeconds: 5, FailureThreshold: 3},
				VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/web", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}}},
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
	if err != nil {
		panic(err)
	}
	obj := payloadObject(i)
	obj["spec"] = map[string]any{"replicas": int64(3), "paused": false, "template": spec}
	return obj
}
