package kubesemantics

import (
	"slices"
	"strings"
	"testing"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/kubernetes/pkg/apis/apps"
	"sigs.k8s.io/yaml"
)

// semanticsAt are the semantics of a server emulating release v with kube's default
// gates there (its minimum compatibility one release before).
func semanticsAt(t *testing.T, v string) *Semantics {
	t.Helper()
	emulation := version.MustParse(v)
	g, err := NewGates(emulation, emulation.SubtractMinor(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	return New(g)
}

// catalogResource is the catalog's resource group/plural as a 1.37 server serves it,
// given s's semantics.
func catalogResource(t *testing.T, s *Semantics, group, plural string) *registry.Resource {
	t.Helper()
	c, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	cr := c.Resource(group, plural)
	if cr == nil {
		t.Fatalf("the catalog has no %s.%s", plural, group)
	}
	at := version.MustParse("1.37")
	r, err := cr.RegistryResource(catalog.Selection{
		Served:         func(v *catalog.Version) bool { return v.AvailableAt(at) },
		StorageVersion: cr.Versions[0].Name,
		At:             at,
	})
	if err != nil {
		t.Fatal(err)
	}
	return configured(t, s, r)
}

// handResource is a namespaced resource with a status subresource and versions (the
// first its storage version), built by hand for resources the catalog lacks, given
// s's semantics.
func handResource(t *testing.T, s *Semantics, group, kind, plural string, versions ...string) *registry.Resource {
	t.Helper()
	r := &registry.Resource{
		Group: group,
		Names: apiextensionsv1.CustomResourceDefinitionNames{
			Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List",
		},
		Namespaced:     true,
		StorageVersion: versions[0],
	}
	for _, v := range versions {
		r.Versions = append(r.Versions, registry.Version{
			Name: v, Served: true,
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		})
	}
	return configured(t, s, r)
}

func configured(t *testing.T, s *Semantics, r *registry.Resource) *registry.Resource {
	t.Helper()
	if !s.Configure(r) {
		t.Fatalf("no semantics for %s", r.GroupResource())
	}
	return r
}

// object decodes a YAML manifest as the server decodes a request's body.
func object(t *testing.T, manifest string) *registry.Object {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return obj
}

// create defaults and creates manifest in version of r, as the store does once it
// has given the object its uid, and returns the object and the errors.
func create(t *testing.T, r *registry.Resource, version, manifest string) (*registry.Object, field.ErrorList) {
	t.Helper()
	obj := object(t, manifest)
	if obj.GetUID() == "" {
		obj.SetUID("6f6ad3e4-0a5b-4c7e-9d1a-2b3c4d5e6f70")
	}
	if err := r.Semantics.Default(version, obj); err != nil {
		t.Fatal(err)
	}
	errs, err := r.Semantics.Create(t.Context(), version, obj)
	if err != nil {
		t.Fatal(err)
	}
	return obj, errs
}

// mustCreate is create of a valid object.
func mustCreate(t *testing.T, r *registry.Resource, version, manifest string) *registry.Object {
	t.Helper()
	obj, errs := create(t, r, version, manifest)
	if len(errs) > 0 {
		t.Fatalf("creating a valid %s: %v", r.Names.Kind, errs)
	}
	return obj
}

// update defaults obj, changes it with change, and updates old (or its status) with
// it, as the store does once it has carried over what an update keeps.
func update(t *testing.T, r *registry.Resource, version, subresource string, old *registry.Object, change func(obj map[string]any)) (*registry.Object, field.ErrorList) {
	t.Helper()
	if old.GetResourceVersion() == "" {
		old.SetResourceVersion("7") // a stored object's, which the update carries
	}
	obj := old.DeepCopy()
	change(obj.Object)
	if err := r.Semantics.Default(version, obj); err != nil {
		t.Fatal(err)
	}
	errs, err := r.Semantics.Update(t.Context(), version, subresource, obj, old)
	if err != nil {
		t.Fatal(err)
	}
	return obj, errs
}

// set sets obj's field at path (dot-separated) to value.
func set(obj map[string]any, path string, value any) {
	if err := unstructured.SetNestedField(obj, value, strings.Split(path, ".")...); err != nil {
		panic(err)
	}
}

// wantErrors checks that errs are, in any order, the errors want names as
// "<field>: <type>" (e.g. "spec.selector: Required value").
func wantErrors(t *testing.T, what string, errs field.ErrorList, want ...string) {
	t.Helper()
	got := make([]string, 0, len(errs))
	for _, e := range errs {
		got = append(got, e.Field+": "+e.Type.String())
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s: errors %q, want %q\n%v", what, got, want, errs)
	}
}

// wantField checks the value of obj's field at path (dot-separated; absent: nil).
func wantField(t *testing.T, obj *registry.Object, path string, want any) {
	t.Helper()
	got, _, err := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(path, ".")...)
	if err != nil || !equalJSON(got, want) {
		t.Errorf("%s %s = %#v, want %#v", obj.GetKind(), path, got, want)
	}
}

// equalJSON compares JSON values, any integer type with any other.
func equalJSON(a, b any) bool {
	if x, ok := asInt(a); ok {
		y, ok := asInt(b)
		return ok && x == y
	}
	ja, err1 := yaml.Marshal(a)
	jb, err2 := yaml.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}

func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case int64:
		return n, true
	}
	return 0, false
}

const statefulSet = `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  updateStrategy: {rollingUpdate: {maxUnavailable: 2}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: busybox}]}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
status: {replicas: 3}
`

// StatefulSets: kube's defaults, a reset status and generation 1 on create;
// maxUnavailable only with its gate (on at 1.37, off at 1.36); kube's errors for a
// bad service name, a selector that misses the template and negative replicas; the
// generation of a spec change; what an update and a status update may change.
func TestStatefulSets(t *testing.T) {
	r := catalogResource(t, semanticsAt(t, "1.37"), "apps", "statefulsets")
	ss := mustCreate(t, r, "v1", statefulSet)
	wantField(t, ss, "metadata.generation", 1)
	wantField(t, ss, "status", map[string]any{"replicas": 0, "availableReplicas": 0})
	wantField(t, ss, "spec.replicas", 1)
	wantField(t, ss, "spec.podManagementPolicy", "OrderedReady")
	wantField(t, ss, "spec.updateStrategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"partition": 0, "maxUnavailable": 2}})
	wantField(t, ss, "spec.template.spec.restartPolicy", "Always")
	wantField(t, ss, "spec.template.spec.containers", []any{map[string]any{
		"name": "c", "image": "busybox", "imagePullPolicy": "Always", "resources": map[string]any{},
		"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
	}})

	old := catalogResource(t, semanticsAt(t, "1.36"), "apps", "statefulsets")
	wantField(t, mustCreate(t, old, "v1", statefulSet), "spec.updateStrategy.rollingUpdate", map[string]any{"partition": 0})

	for _, tc := range []struct {
		name, path string
		value      any
		want       []string
	}{
		{"bad service name", "spec.serviceName", "Db_1", []string{"spec.serviceName: Invalid value"}},
		{"selector misses the template", "spec.selector.matchLabels.app", "web", []string{"spec.template.metadata.labels: Invalid value"}},
		{"negative replicas", "spec.replicas", int64(-1), []string{"spec.replicas: Invalid value"}},
		{"unknown pod management policy", "spec.podManagementPolicy", "Random", []string{"spec.podManagementPolicy: Invalid value"}},
	} {
		obj := object(t, statefulSet)
		set(obj.Object, tc.path, tc.value)
		j, _ := obj.MarshalJSON()
		_, errs := create(t, r, "v1", string(j))
		wantErrors(t, tc.name, errs, tc.want...)
	}

	scaled, errs := update(t, r, "v1", "", ss, func(o map[string]any) { set(o, "spec.replicas", int64(3)); set(o, "status.replicas", int64(3)) })
	wantErrors(t, "scaling", errs)
	wantField(t, scaled, "metadata.generation", 2)
	wantField(t, scaled, "status.replicas", 0)
	_, errs = update(t, r, "v1", "", ss, func(o map[string]any) { set(o, "spec.serviceName", "other") })
	wantErrors(t, "changing the service name", errs, "spec.serviceName: Invalid value")
	status, errs := update(t, r, "v1", "status", ss, func(o map[string]any) { set(o, "status.replicas", int64(2)); set(o, "spec.replicas", int64(5)) })
	wantErrors(t, "status update", errs)
	wantField(t, status, "status.replicas", 2)
	wantField(t, status, "spec.replicas", 1)
	wantField(t, status, "metadata.generation", 1)
	_, errs = update(t, r, "v1", "status", ss, func(o map[string]any) { set(o, "status.replicas", int64(-1)) })
	wantErrors(t, "negative status replicas", errs, "status.replicas: Invalid value", "status.readyReplicas: Invalid value",
		"status.currentReplicas: Invalid value", "status.updatedReplicas: Invalid value", "status.availableReplicas: Invalid value")
}

// The options of a StatefulSet's validation: Recreate needs its gate but for an
// update of a StatefulSet that uses it; an update tolerates what it cannot change.
func TestStatefulSetOptions(t *testing.T) {
	for _, v := range []string{"1.36", "1.37"} {
		semanticsAt(t, v).gates.Do(func() {
			gate := statefulSetOptions(nil).AllowStatefulSetRecreateStrategy
			if o := statefulSetOptions(nil); o.AllowInvalidServiceName || o.SkipValidateVolumeClaimTemplates {
				t.Errorf("%s: create options %+v", v, o)
			}
			stored := func(typ apps.StatefulSetUpdateStrategyType) *apps.StatefulSet {
				return &apps.StatefulSet{Spec: apps.StatefulSetSpec{UpdateStrategy: apps.StatefulSetUpdateStrategy{Type: typ}}}
			}
			o := statefulSetOptions(stored(apps.RollingUpdateStatefulSetStrategyType))
			if !o.AllowInvalidServiceName || !o.SkipValidateVolumeClaimTemplates || o.AllowStatefulSetRecreateStrategy != gate {
				t.Errorf("%s: update options %+v (gate %v)", v, o, gate)
			}
			if !statefulSetOptions(stored(apps.RecreateStatefulSetStrategyType)).AllowStatefulSetRecreateStrategy {
				t.Errorf("%s: an update of a Recreate StatefulSet may not keep it", v)
			}
		})
	}
}

// The warnings of a StatefulSet: a negative revision history limit, and a claim
// template's, under its index on create and its "Spec" on update.
func TestStatefulSetWarnings(t *testing.T) {
	limit := int32(-1)
	s := &apps.StatefulSet{Spec: apps.StatefulSetSpec{RevisionHistoryLimit: &limit}}
	if w := statefulSetWarnings([]string{"template"}, s, nil); len(w) != 2 || w[0] != "template" || !strings.HasPrefix(w[1], "spec.revisionHistoryLimit: a negative value") {
		t.Errorf("warnings %q", w)
	}
	s.Spec.RevisionHistoryLimit = nil
	if w := statefulSetWarnings(nil, s, s); len(w) != 0 {
		t.Errorf("warnings of a plain StatefulSet: %q", w)
	}
}

const daemonSet = `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: default, generation: 9}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: "busybox:1.36"}]}
`

// DaemonSets: kube's defaults, generation and template generation 1 on create; a
// change of the template counts one more of both, another change of the spec one more
// generation; kube's errors. apps/v1 carries the template generation in an
// annotation, which only the server sets.
func TestDaemonSets(t *testing.T) {
	const templateGeneration = "deprecated.daemonset.template.generation"
	r := catalogResource(t, semanticsAt(t, "1.37"), "apps", "daemonsets")
	ds := mustCreate(t, r, "v1", daemonSet)
	wantField(t, ds, "metadata.generation", 1)
	wantField(t, ds, "metadata.annotations", map[string]any{templateGeneration: "1"})
	wantField(t, ds, "spec.revisionHistoryLimit", 10)
	wantField(t, ds, "spec.updateStrategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": 1, "maxSurge": 0}})
	wantField(t, ds, "spec.template.spec.dnsPolicy", "ClusterFirst")

	for _, tc := range []struct {
		name, path string
		value      any
		want       []string
	}{
		{"selector misses the template", "spec.selector.matchLabels.app", "web", []string{"spec.template.metadata.labels: Invalid value"}},
		{"restart policy Never", "spec.template.spec.restartPolicy", "Never", []string{"spec.template.spec.restartPolicy: Unsupported value"}},
		{"negative minReadySeconds", "spec.minReadySeconds", int64(-1), []string{"spec.minReadySeconds: Invalid value"}},
	} {
		obj := object(t, daemonSet)
		set(obj.Object, tc.path, tc.value)
		j, _ := obj.MarshalJSON()
		_, errs := create(t, r, "v1", string(j))
		wantErrors(t, tc.name, errs, tc.want...)
	}

	image, errs := update(t, r, "v1", "", ds, func(o map[string]any) {
		set(o, "spec.template.spec.containers", []any{map[string]any{"name": "c", "image": "busybox:1.37"}})
		set(o, "metadata.annotations", map[string]any{templateGeneration: "5"})
	})
	wantErrors(t, "a new image", errs)
	wantField(t, image, "metadata.generation", 2)
	wantField(t, image, "metadata.annotations", map[string]any{templateGeneration: "2"})
	ready, errs := update(t, r, "v1", "", ds, func(o map[string]any) { set(o, "spec.minReadySeconds", int64(5)) })
	wantErrors(t, "minReadySeconds", errs)
	wantField(t, ready, "metadata.generation", 2)
	wantField(t, ready, "metadata.annotations", map[string]any{templateGeneration: "1"})
	same, errs := update(t, r, "v1", "", ds, func(o map[string]any) { set(o, "metadata.labels", map[string]any{"team": "a"}) })
	wantErrors(t, "labels", errs)
	wantField(t, same, "metadata.generation", 1)
	_, errs = update(t, r, "v1", "", ds, func(o map[string]any) {
		set(o, "spec.selector.matchLabels", map[string]any{"app": "agent", "tier": "x"})
		set(o, "spec.template.metadata.labels.tier", "x")
	})
	wantErrors(t, "a new selector", errs, "spec.selector: Invalid value")
	_, errs = update(t, r, "v1", "status", ds, func(o map[string]any) { set(o, "status.numberReady", int64(-1)) })
	wantErrors(t, "negative numberReady", errs, "status.numberReady: Invalid value")
}

// ControllerRevisions: validation alone; the generation stays the client's; data and
// revision number never change.
func TestControllerRevisions(t *testing.T) {
	r := catalogResource(t, semanticsAt(t, "1.37"), "apps", "controllerrevisions")
	const revision = `
apiVersion: apps/v1
kind: ControllerRevision
metadata: {name: web-1, namespace: default, generation: 3}
revision: 1
data: {spec: {template: {}}}
`
	cr := mustCreate(t, r, "v1", revision)
	wantField(t, cr, "metadata.generation", 3)
	wantField(t, cr, "data", map[string]any{"spec": map[string]any{"template": map[string]any{}}})
	obj := object(t, revision)
	set(obj.Object, "revision", int64(-1))
	j, _ := obj.MarshalJSON()
	_, errs := create(t, r, "v1", string(j))
	wantErrors(t, "negative revision", errs, "revision: Invalid value")
	_, errs = update(t, r, "v1", "", cr, func(o map[string]any) { set(o, "data", map[string]any{"other": true}) })
	wantErrors(t, "new data", errs, "data: Invalid value")
	labelled, errs := update(t, r, "v1", "", cr, func(o map[string]any) { set(o, "metadata.labels", map[string]any{"a": "b"}) })
	wantErrors(t, "labels", errs)
	wantField(t, labelled, "metadata.generation", 3)
}

// Deployments and ReplicaSets: generation 1 and kube's defaults on create, kube's
// errors, a selector that never changes, the generation of a spec change (and, for a
// Deployment, of its annotations).
func TestDeploymentsAndReplicaSets(t *testing.T) {
	s := semanticsAt(t, "1.37")
	for _, kind := range []string{"Deployment", "ReplicaSet"} {
		r := catalogResource(t, s, "apps", strings.ToLower(kind)+"s")
		manifest := `
apiVersion: apps/v1
kind: ` + kind + `
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
`
		w := mustCreate(t, r, "v1", manifest)
		wantField(t, w, "metadata.generation", 1)
		wantField(t, w, "spec.replicas", 1)
		wantField(t, w, "spec.template.spec.schedulerName", "default-scheduler")
		obj := object(t, manifest)
		unstructured.RemoveNestedField(obj.Object, "spec", "selector")
		j, _ := obj.MarshalJSON()
		_, errs := create(t, r, "v1", string(j))
		wantErrors(t, kind+" without selector", errs, "spec.selector: Required value", "spec.template.metadata.labels: Invalid value")
		_, errs = update(t, r, "v1", "", w, func(o map[string]any) {
			set(o, "spec.selector.matchLabels.tier", "x")
			set(o, "spec.template.metadata.labels.tier", "x")
		})
		wantErrors(t, kind+" with a new selector", errs, "spec.selector: Invalid value")
		scaled, errs := update(t, r, "v1", "", w, func(o map[string]any) { set(o, "spec.replicas", int64(3)) })
		wantErrors(t, "scaling a "+kind, errs)
		wantField(t, scaled, "metadata.generation", 2)
		annotated, errs := update(t, r, "v1", "", w, func(o map[string]any) { set(o, "metadata.annotations", map[string]any{"a": "b"}) })
		wantErrors(t, "annotating a "+kind, errs)
		wantField(t, annotated, "metadata.generation", map[string]int{"Deployment": 2, "ReplicaSet": 1}[kind])
	}
}
