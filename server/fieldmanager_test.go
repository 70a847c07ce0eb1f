package server

import (
	"reflect"
	"testing"

	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// trackCreate must record exactly what the field manager records for a create, for
// every shape of object: maps, associative lists, atomic lists, sets, a status the main
// resource may not own, schemaless resources, objects that own nothing, objects that
// bring their own managedFields.
func TestTrackCreateIsTheFieldManagersCreate(t *testing.T) {
	byGR := builtinResources(t)
	schemaless := &registry.Resource{
		Group:          "example.com",
		Names:          apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Kind: "Thing", ListKind: "ThingList"},
		Namespaced:     true,
		Versions:       []registry.Version{{Name: "v1", Served: true}},
		StorageVersion: "v1",
	}
	byGR[schemaless.GroupResource()] = schemaless

	meta := func(extra map[string]interface{}) map[string]interface{} {
		m := map[string]interface{}{"name": "x", "namespace": "default", "uid": "u", "creationTimestamp": "2026-11-21T08:00:00Z"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	containers := []interface{}{
		map[string]interface{}{"name": "c1", "image": "img:1",
			"ports": []interface{}{map[string]interface{}{"containerPort": int64(80), "protocol": "TCP"}, map[string]interface{}{"containerPort": int64(53), "protocol": "UDP"}},
			"env":   []interface{}{map[string]interface{}{"name": "A", "value": "b"}},
			"args":  []interface{}{"--x", "--y"}},
		map[string]interface{}{"name": "c2", "image": "img:2"},
	}
	cases := []struct {
		name string
		gr   schema.GroupResource
		obj  map[string]interface{}
	}{
		{"configmap", schema.GroupResource{Resource: "configmaps"}, map[string]interface{}{
			"metadata": meta(map[string]interface{}{"labels": map[string]interface{}{"app": "a"}, "annotations": map[string]interface{}{"n": "v"}}),
			"data":     map[string]interface{}{"a": "1", "b": "2"}, "binaryData": map[string]interface{}{"c": "AA=="}}},
		{"owns nothing", schema.GroupResource{Resource: "configmaps"}, map[string]interface{}{"metadata": meta(nil)}},
		{"cronjob", schema.GroupResource{Group: "batch", Resource: "cronjobs"}, map[string]interface{}{
			"metadata": meta(map[string]interface{}{"finalizers": []interface{}{"a/b"}, "ownerReferences": []interface{}{
				map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "ou"}}}),
			"spec": map[string]interface{}{"schedule": "* * * * *", "jobTemplate": map[string]interface{}{"spec": map[string]interface{}{
				"template": map[string]interface{}{"spec": map[string]interface{}{"containers": containers, "nodeSelector": map[string]interface{}{"k": "v"}}}}}},
			"status": map[string]interface{}{"lastScheduleTime": "2026-11-21T08:00:00Z"}}},
		{"flowschema", schema.GroupResource{Group: "flowcontrol.apiserver.k8s.io", Resource: "flowschemas"}, map[string]interface{}{
			"metadata": meta(map[string]interface{}{"namespace": ""}),
			"spec": map[string]interface{}{"priorityLevelConfiguration": map[string]interface{}{"name": "p"}, "matchingPrecedence": int64(500),
				"rules": []interface{}{map[string]interface{}{
					"subjects":         []interface{}{map[string]interface{}{"kind": "Group", "group": map[string]interface{}{"name": "system:authenticated"}}},
					"resourceRules":    []interface{}{map[string]interface{}{"verbs": []interface{}{"get"}, "apiGroups": []interface{}{"*"}, "resources": []interface{}{"*"}, "namespaces": []interface{}{"*"}}},
					"nonResourceRules": []interface{}{map[string]interface{}{"verbs": []interface{}{"*"}, "nonResourceURLs": []interface{}{"/healthz"}}}}}}}},
		{"autoscaler with status", schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}, map[string]interface{}{
			"metadata": meta(nil),
			"spec": map[string]interface{}{"maxReplicas": int64(3), "scaleTargetRef": map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
				"metrics": []interface{}{map[string]interface{}{"type": "Resource", "resource": map[string]interface{}{"name": "cpu",
					"target": map[string]interface{}{"type": "Utilization", "averageUtilization": int64(50)}}}}},
			"status": map[string]interface{}{"currentReplicas": int64(1), "desiredReplicas": int64(2)}}},
		{"servicecidr", schema.GroupResource{Group: "networking.k8s.io", Resource: "servicecidrs"}, map[string]interface{}{
			"metadata": meta(map[string]interface{}{"namespace": ""}), "spec": map[string]interface{}{"cidrs": []interface{}{"10.0.0.0/24", "fd00::/108"}}}},
		{"lease", schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, map[string]interface{}{
			"metadata": meta(nil), "spec": map[string]interface{}{"holderIdentity": "h", "leaseDurationSeconds": int64(10)}}},
		{"namespace", schema.GroupResource{Resource: "namespaces"}, map[string]interface{}{
			"metadata": meta(map[string]interface{}{"namespace": ""}), "spec": map[string]interface{}{"finalizers": []interface{}{"kubernetes"}}}},
		{"schemaless", schemaless.GroupResource(), map[string]interface{}{
			"metadata": meta(map[string]interface{}{"labels": map[string]interface{}{"a": "b"}}),
			"spec":     map[string]interface{}{"list": []interface{}{int64(1), map[string]interface{}{"a": "b"}}, "n": 1.5}}},
		{"brings managedFields", schema.GroupResource{Resource: "configmaps"}, map[string]interface{}{
			"metadata": meta(map[string]interface{}{"managedFields": []interface{}{map[string]interface{}{
				"manager": "someone", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
				"fieldsV1": map[string]interface{}{"f:data": map[string]interface{}{"f:a": map[string]interface{}{}}}}}}),
			"data": map[string]interface{}{"a": "1"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := byGR[c.gr]
			if res == nil {
				t.Fatalf("no resource %s", c.gr)
			}
			version := res.PreferredVersion()
			c.obj["apiVersion"] = res.GroupVersion(version).String()
			c.obj["kind"] = res.Names.Kind
			fm, err := (&Server{}).fieldManager(res, version, "")
			if err != nil {
				t.Fatal(err)
			}
			in := &unstructured.Unstructured{Object: c.obj}
			want := fm.track(nil, in.DeepCopy(), "test-manager")
			got := fm.trackCreate(in.DeepCopy(), "test-manager")
			for _, o := range []*unstructured.Unstructured{want, got} {
				for _, e := range o.GetManagedFields() {
					if e.Time == nil || e.Time.IsZero() {
						t.Errorf("entry %s has no time", e.Manager)
					}
				}
				if m, ok := o.Object["metadata"].(map[string]interface{})["managedFields"].([]interface{}); ok {
					for _, e := range m {
						delete(e.(map[string]interface{}), "time")
					}
				}
			}
			if !reflect.DeepEqual(got.Object, want.Object) {
				t.Errorf("trackCreate:\n%v\nthe field manager:\n%v", got.Object, want.Object)
			}
		})
	}
}

func BenchmarkTrackCreate(b *testing.B) {
	res := builtinResources(b)[schema.GroupResource{Resource: "configmaps"}]
	fm, err := (&Server{}).fieldManager(res, "v1", "")
	if err != nil {
		b.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "x", "namespace": "default"},
		"data":     map[string]interface{}{"payload": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}}}
	b.Run("field-manager", func(b *testing.B) {
		for b.Loop() {
			fm.track(nil, obj.DeepCopy(), "m")
		}
	})
	b.Run("trackCreate", func(b *testing.B) {
		for b.Loop() {
			fm.trackCreate(obj.DeepCopy(), "m")
		}
	})
}

// An update that changes nothing a manager can own keeps the managedFields as the field
// manager keeps them, and any other update goes to the field manager.
func TestTrackUnchangedUpdateIsTheFieldManagersUpdate(t *testing.T) {
	res := builtinResources(t)[schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}]
	version := res.PreferredVersion()
	fm, err := (&Server{}).fieldManager(res, version, "")
	if err != nil {
		t.Fatal(err)
	}
	base := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": res.GroupVersion(version).String(), "kind": "HorizontalPodAutoscaler",
			"metadata": map[string]interface{}{"name": "h", "namespace": "default", "labels": map[string]interface{}{"a": "b"}},
			"spec": map[string]interface{}{"maxReplicas": int64(3),
				"scaleTargetRef": map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}},
		}}
	}
	created := fm.trackCreate(base(), "creator")
	created.SetUID("u")
	created.SetResourceVersion("5")
	created.SetCreationTimestamp(created.GetCreationTimestamp())
	untracked := base()
	untracked.SetUID("u")

	cases := []struct {
		name          string
		current, next func() *unstructured.Unstructured
		fast          bool
	}{
		{"same object", created.DeepCopy, created.DeepCopy, true},
		{"without managedFields in the body", created.DeepCopy, func() *unstructured.Unstructured {
			n := created.DeepCopy()
			unstructured.RemoveNestedField(n.Object, "metadata", "managedFields")
			n.SetResourceVersion("")
			return n
		}, true},
		{"stripped metadata differs", created.DeepCopy, func() *unstructured.Unstructured {
			n := created.DeepCopy()
			n.SetGeneration(7)
			n.SetUID("other")
			return n
		}, true},
		{"nothing tracked yet", untracked.DeepCopy, untracked.DeepCopy, true},
		{"a label changes", created.DeepCopy, func() *unstructured.Unstructured {
			n := created.DeepCopy()
			n.SetLabels(map[string]string{"a": "c"})
			return n
		}, false},
		{"the spec changes", created.DeepCopy, func() *unstructured.Unstructured {
			n := created.DeepCopy()
			_ = unstructured.SetNestedField(n.Object, int64(4), "spec", "maxReplicas")
			return n
		}, false},
		{"the body resets managedFields", created.DeepCopy, func() *unstructured.Unstructured {
			n := created.DeepCopy()
			_ = unstructured.SetNestedSlice(n.Object, []interface{}{map[string]interface{}{}}, "metadata", "managedFields")
			return n
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ownershipUnchanged(c.current(), c.next()); got != c.fast {
				t.Fatalf("ownershipUnchanged = %v, want %v", got, c.fast)
			}
			want := fm.trackWithFieldManager(c.current(), c.next(), "updater")
			got := fm.track(c.current(), c.next(), "updater")
			if !c.fast {
				// Both went to the field manager, whose new entry's time may tick in between.
				for _, o := range []*unstructured.Unstructured{want, got} {
					mf, _ := nestedManagedFields(o)
					for _, e := range mf {
						if m := e.(map[string]interface{}); m["manager"] == "updater" {
							delete(m, "time")
						}
					}
				}
			}
			if !reflect.DeepEqual(got.Object, want.Object) {
				t.Errorf("track:\n%v\nthe field manager:\n%v", got.Object, want.Object)
			}
		})
	}
}

// builtinResources returns the resources of the default API catalog by group-resource.
func builtinResources(tb testing.TB) map[schema.GroupResource]*registry.Resource {
	tb.Helper()
	cfg, err := compatibility.NewOptions().Complete(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	builtins, err := cfg.Resources()
	if err != nil {
		tb.Fatal(err)
	}
	byGR := map[schema.GroupResource]*registry.Resource{}
	for _, r := range builtins {
		byGR[r.GroupResource()] = r
	}
	return byGR
}
