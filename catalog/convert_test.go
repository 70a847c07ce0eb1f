package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// toUnstructured turns a typed object into the unstructured form the registry holds.
func toUnstructured(t testing.TB, obj runtime.Object, apiVersion, kind string) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u
}

// convert converts a copy of obj through the versions in path and returns it.
func convertThrough(t *testing.T, c *Converter, obj *unstructured.Unstructured, path ...string) *unstructured.Unstructured {
	t.Helper()
	out := obj.DeepCopy()
	for _, v := range path {
		if err := c.Convert(t.Context(), []*unstructured.Unstructured{out}, v); err != nil {
			t.Fatalf("converting to %s: %v", v, err)
		}
	}
	return out
}

// checkRoundTrips converts obj (in version start) through every sequence of one or two
// other versions and back to start, and checks it comes back unchanged.
func checkRoundTrips(t *testing.T, c *Converter, obj *unstructured.Unstructured, start string, versions []string) {
	t.Helper()
	for _, a := range versions {
		if a == start {
			continue
		}
		paths := [][]string{{a, start}}
		for _, b := range versions {
			if b != a {
				paths = append(paths, []string{a, b, start})
			}
		}
		for _, p := range paths {
			if diff := cmp.Diff(obj.Object, convertThrough(t, c, obj, p...).Object); diff != "" {
				t.Errorf("%s -> %v changed the object (-want +got):\n%s", start, p, diff)
			}
		}
	}
}

func hpaV2(t testing.TB) *unstructured.Unstructured {
	obj := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](2),
			MaxReplicas:    10,
			Metrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name:   corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)},
				}},
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("1k"))},
				}},
			},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](300)},
			},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 3, DesiredReplicas: 4,
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale"}},
		},
	}
	return toUnstructured(t, obj, "autoscaling/v2", "HorizontalPodAutoscaler")
}

func hpaV1(t *testing.T) *unstructured.Unstructured {
	obj := &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef:                 autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:                    ptr.To[int32](1),
			MaxReplicas:                    5,
			TargetCPUUtilizationPercentage: ptr.To[int32](80),
		},
		Status: autoscalingv1.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 2, CurrentCPUUtilizationPercentage: ptr.To[int32](75)},
	}
	return toUnstructured(t, obj, "autoscaling/v1", "HorizontalPodAutoscaler")
}

func TestConvertHPA(t *testing.T) {
	hpa := mustDefault(t).Resource("autoscaling", "horizontalpodautoscalers")
	c := NewConverter(hpa)

	v2 := hpaV2(t)
	v1 := convertThrough(t, c, v2, "v1")
	if v1.GetAPIVersion() != "autoscaling/v1" {
		t.Errorf("apiVersion = %s", v1.GetAPIVersion())
	}
	for _, f := range [][]string{{"spec", "metrics"}, {"spec", "behavior"}, {"status", "conditions"}} {
		if _, found, _ := unstructured.NestedFieldNoCopy(v1.Object, f...); found {
			t.Errorf("v1 object still has %v", f)
		}
	}
	if n, _, _ := unstructured.NestedInt64(v1.Object, "spec", "maxReplicas"); n != 10 {
		t.Errorf("v1 lost spec.maxReplicas: %v", v1.Object["spec"])
	}
	var preserved map[string]interface{}
	if err := json.Unmarshal([]byte(v1.GetAnnotations()[PreservedFieldsAnnotation]), &preserved); err != nil {
		t.Fatalf("annotation: %v", err)
	}
	if got := fmt.Sprint(sortedKeys(preserved)); got != "[/spec/behavior /spec/metrics /status/conditions /status/currentMetrics]" {
		t.Errorf("preserved fields = %s", got)
	}
	if v1.GetLabels()["app"] != "web" {
		t.Error("conversion touched metadata")
	}

	versions := []string{"v2", "v1", "v2beta2", "v2beta1"}
	checkRoundTrips(t, c, hpaV2(t), "v2", versions)
	checkRoundTrips(t, c, hpaV1(t), "v1", versions)

	// A v2beta1 object, whose metrics spell targets as targetAverageUtilization: the
	// field is unknown to the (shared) v2 schema, so it rides along untouched, and the
	// list it is in is preserved whole in v1.
	beta := fromYAML(t, `
apiVersion: autoscaling/v2beta1
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: cpu, targetAverageUtilization: 50}
`)
	checkRoundTrips(t, c, &unstructured.Unstructured{Object: beta}, "v2beta1", versions)
}

func TestConvertPriorityLevelConfiguration(t *testing.T) {
	plc := NewConverter(mustDefault(t).Resource("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"))
	versions := []string{"v1", "v1beta3", "v1beta2", "v1beta1"}

	// v1beta1 and v1beta2 call the shares assuredConcurrencyShares; v1beta3 and v1
	// call them nominalConcurrencyShares.
	old := toUnstructured(t, &flowcontrolv1beta1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "workload-low"},
		Spec: flowcontrolv1beta1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1beta1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1beta1.LimitedPriorityLevelConfiguration{
				AssuredConcurrencyShares: 100,
				LimitResponse:            flowcontrolv1beta1.LimitResponse{Type: flowcontrolv1beta1.LimitResponseTypeReject},
			},
		},
	}, "flowcontrol.apiserver.k8s.io/v1beta1", "PriorityLevelConfiguration")
	inV1 := convertThrough(t, plc, old, "v1")
	if _, found, _ := unstructured.NestedFieldNoCopy(inV1.Object, "spec", "limited", "assuredConcurrencyShares"); found {
		t.Error("v1 object has assuredConcurrencyShares")
	}
	if got := inV1.GetAnnotations()[PreservedFieldsAnnotation]; got != `{"/spec/limited/assuredConcurrencyShares":100}` {
		t.Errorf("annotation = %s", got)
	}
	checkRoundTrips(t, plc, old, "v1beta1", versions)

	current := toUnstructured(t, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "workload-high"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: ptr.To[int32](40),
				LendablePercent:          ptr.To[int32](50),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{
					Queues: 64, HandSize: 6, QueueLengthLimit: 50,
				}},
			},
		},
	}, "flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration")
	checkRoundTrips(t, plc, current, "v1", versions)
}

// widgets is a test resource whose versions differ in every way the converter handles.
func widgets(t *testing.T) *Resource {
	t.Helper()
	c, err := Parse([]byte(`
releases: ["1.30"]
groups:
- name: example.com
  resources:
  - plural: widgets
    kind: Widget
    versions:
    - name: v1
      introduced: "1.30"
      schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              mode: {type: string}
              labels: {type: object, additionalProperties: {type: string}}
              config:
                type: object
                additionalProperties:
                  type: object
                  properties: {a: {type: integer}, b: {type: integer}}
              items:
                type: array
                items: {type: object, properties: {name: {type: string}, weight: {type: integer}}}
          status: {type: object, properties: {phase: {type: string}}}
    - name: v2
      introduced: "1.30"
      schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: string}
              config:
                type: object
                additionalProperties: {type: object, properties: {a: {type: integer}}}
              items:
                type: array
                items: {type: object, properties: {name: {type: string}}}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status:
            type: object
            properties:
              phase: {type: string}
              conditions: {type: array, items: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    - name: v3
      introduced: "1.30"
`))
	if err != nil {
		t.Fatal(err)
	}
	return c.Resource("example.com", "widgets")
}

// fromYAML decodes an object as the registry does, integers as int64.
func fromYAML(t *testing.T, s string) map[string]interface{} {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]interface{}{}
	if err := utiljson.Unmarshal(j, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func widget(t *testing.T, apiVersion, spec string) *unstructured.Unstructured {
	t.Helper()
	return &unstructured.Unstructured{Object: fromYAML(t, "apiVersion: "+apiVersion+"\nkind: Widget\nmetadata: {name: w}\n"+spec)}
}

func TestConvertMovesWhatTheTargetLacks(t *testing.T) {
	c := NewConverter(widgets(t))
	v1 := widget(t, "example.com/v1", `
spec:
  size: 3
  mode: fast
  labels: {team: a}
  config:
    "x/y": {a: 1, b: 2}
    "m~n": {a: 1, b: 3}
  items: [{name: n1, weight: 5}, {name: n2}]
  unknownToBoth: 1
status: {phase: Ready}
`)
	v2 := convertThrough(t, c, v1, "v2")
	want := widget(t, "example.com/v2", `
spec:
  config:
    "x/y": {a: 1}
    "m~n": {a: 1}
  items: [{name: n1}, {name: n2}]
  unknownToBoth: 1
status: {phase: Ready}
`)
	want.SetAnnotations(map[string]string{PreservedFieldsAnnotation: `{"/spec/config/m~0n/b":3,"/spec/config/x~1y/b":2,"/spec/items/0/weight":5,"/spec/labels":{"team":"a"},"/spec/mode":"fast","/spec/size":3}`})
	if diff := cmp.Diff(want.Object, v2.Object); diff != "" {
		t.Errorf("v1 -> v2 (-want +got):\n%s", diff)
	}
	checkRoundTrips(t, c, v1, "v1", []string{"v1", "v2", "v3"})

	// A version without a schema has a place for every field and declares none:
	// nothing moves into or out of it.
	v3 := widget(t, "example.com/v3", "spec: {size: big, colour: red}\nstatus: {conditions: [{type: Ready}]}\n")
	checkRoundTrips(t, c, v3, "v3", []string{"v1", "v2", "v3"})
	inV1 := convertThrough(t, c, v3, "v1")
	v3.SetAPIVersion("example.com/v1")
	if diff := cmp.Diff(v3.Object, inV1.Object); diff != "" {
		t.Errorf("v3 -> v1 moved fields (-want +got):\n%s", diff)
	}
}

func TestConvertRestoring(t *testing.T) {
	c := NewConverter(widgets(t))
	annotated := func(obj *unstructured.Unstructured, preserved string) *unstructured.Unstructured {
		obj.SetAnnotations(map[string]string{PreservedFieldsAnnotation: preserved, "keep": "me"})
		return obj
	}
	for _, tc := range []struct {
		name     string
		in       *unstructured.Unstructured
		to       string
		want     *unstructured.Unstructured
		wantKept string // the annotation left, "" for none
	}{{
		name:     "the object's own value wins over a preserved one",
		in:       annotated(widget(t, "example.com/v2", "spec: {items: [{name: n1}]}\n"), `{"/spec/items/0/name":"stale","/spec/items/0/weight":7}`),
		to:       "v1",
		want:     widget(t, "example.com/v1", "spec: {items: [{name: n1, weight: 7}]}\n"),
		wantKept: "",
	}, {
		name: "missing objects are created, missing list items are not",
		in:   annotated(widget(t, "example.com/v2", "spec: {items: []}\n"), `{"/spec/items/3/weight":1,"/status/phase":"Done"}`),
		to:   "v1",
		want: widget(t, "example.com/v1", "spec: {items: []}\nstatus: {phase: Done}\n"), wantKept: `{"/spec/items/3/weight":1}`,
	}, {
		name: "a value is restored where its type fits",
		in:   annotated(widget(t, "example.com/v1", "spec: {}\n"), `{"/spec/size":"big"}`),
		to:   "v2",
		want: widget(t, "example.com/v2", "spec: {size: big}\n"), wantKept: "",
	}, {
		name: "a value of the wrong type stays preserved",
		in:   annotated(widget(t, "example.com/v2", "spec: {}\n"), `{"/spec/size":"big"}`),
		to:   "v1",
		want: widget(t, "example.com/v1", "spec: {}\n"), wantKept: `{"/spec/size":"big"}`,
	}, {
		name: "an unreadable annotation is discarded",
		in:   annotated(widget(t, "example.com/v1", "spec: {size: 1}\n"), `not json`),
		to:   "v2",
		want: widget(t, "example.com/v2", "spec: {}\n"), wantKept: `{"/spec/size":1}`,
	}, {
		name: "metadata is never restored",
		in:   annotated(widget(t, "example.com/v2", "spec: {}\n"), `{"/metadata/name":"other","/kind":"Gadget"}`),
		to:   "v1",
		want: widget(t, "example.com/v1", "spec: {}\n"), wantKept: "",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := convertThrough(t, c, tc.in, tc.to)
			want := map[string]string{"keep": "me"}
			if tc.wantKept != "" {
				want[PreservedFieldsAnnotation] = tc.wantKept
			}
			tc.want.SetAnnotations(want)
			if diff := cmp.Diff(tc.want.Object, got.Object); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}

	// The annotation goes when nothing is left to preserve, and so does an annotations
	// map it leaves empty.
	v1 := widget(t, "example.com/v1", "spec: {mode: fast}\n")
	back := convertThrough(t, c, v1, "v2", "v1")
	if _, found := back.Object["metadata"].(map[string]interface{})["annotations"]; found {
		t.Errorf("round trip left annotations: %v", back.GetAnnotations())
	}
}

func TestConvertErrors(t *testing.T) {
	c := NewConverter(widgets(t))
	for _, tc := range []struct {
		apiVersion, to string
	}{
		{"example.com/v9", "v1"}, // a version the resource does not have
		{"other.io/v1", "v2"},    // another group
		{"v1", "v2"},             // the core group
		{"example.com/v1", "v9"}, // an unknown target
	} {
		err := c.Convert(t.Context(), []*unstructured.Unstructured{widget(t, tc.apiVersion, "")}, tc.to)
		if !errors.Is(err, ErrUnknownVersion) {
			t.Errorf("%s to %s: error %v, want ErrUnknownVersion", tc.apiVersion, tc.to, err)
		}
	}
	err := c.Convert(t.Context(), []*unstructured.Unstructured{widget(t, "example.com/v1", ""), widget(t, "other.io/v1", "")}, "v2")
	if want := `version not in the API catalog: widgets.example.com w has apiVersion "other.io/v1", not a version of the resource`; err == nil || err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	// Objects already in the target version are left alone, whatever their content.
	same := widget(t, "example.com/v2", "spec: {mode: fast}\n")
	if err := c.Convert(t.Context(), []*unstructured.Unstructured{same}, "v2"); err != nil || same.Object["spec"].(map[string]interface{})["mode"] != "fast" {
		t.Errorf("converting to the same version: %v, %v", err, same.Object)
	}
}

// TestConvertConcurrently converts from many goroutines with one converter; run with -race.
func TestConvertConcurrently(t *testing.T) {
	c := NewConverter(mustDefault(t).Resource("autoscaling", "horizontalpodautoscalers"))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			obj := hpaV2(t)
			to := []string{"v1", "v2beta1", "v2beta2", "v1"}[i%4]
			back := convertThrough(t, c, obj, to, "v2")
			if diff := cmp.Diff(obj.Object, back.Object); diff != "" {
				t.Errorf("v2 -> %s -> v2 (-want +got):\n%s", to, diff)
			}
		})
	}
	wg.Wait()
}

// BenchmarkConvertHPA measures a v2 -> v1 -> v2 round trip of a typical object.
func BenchmarkConvertHPA(b *testing.B) {
	c := NewConverter(mustDefault(b).Resource("autoscaling", "horizontalpodautoscalers"))
	obj := hpaV2(b)
	for b.Loop() {
		o := obj.DeepCopy()
		objs := []*unstructured.Unstructured{o}
		if err := c.Convert(b.Context(), objs, "v1"); err != nil {
			b.Fatal(err)
		}
		if err := c.Convert(b.Context(), objs, "v2"); err != nil {
			b.Fatal(err)
		}
	}
}
