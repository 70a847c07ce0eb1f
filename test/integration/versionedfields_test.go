package integration

import (
	"strings"
	"testing"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// fieldsDeployment is a Deployment named name whose pod spec has extra (merged in).
func fieldsDeployment(name string, extra map[string]interface{}) *unstructured.Unstructured {
	podSpec := map[string]interface{}{"containers": []interface{}{map[string]interface{}{"name": "c", "image": "nginx"}}}
	for k, v := range extra {
		podSpec[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]interface{}{"name": name, "namespace": "default"},
		"spec": map[string]interface{}{
			"replicas": int64(1),
			"selector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": name}},
			"template": map[string]interface{}{
				"metadata": map[string]interface{}{"labels": map[string]interface{}{"app": name}},
				"spec":     podSpec,
			},
		},
	}}
}

// The rows of KEP-4330's test plan about API fields and validation, with real fields
// of apps/v1 Deployments (their pod template: PodSpec.evictionResponders, new in 1.37,
// and the toleration operator Gt, valid since 1.35; both alpha, their gates on where
// the server may enable alpha features), on one server restarted with other
// compatibility versions:
//
//   - "we only allow data into new API fields once they existed in the previous
//     release": a 1.37 field is refused (422 Forbidden) while the minimum compatibility
//     version is 1.36, and accepted at 1.37; back at 1.36, an object that has it stays
//     updatable while the field is left as it is, and changing it is refused;
//   - "this needs to account for emulation version": emulating 1.35 (minimum
//     compatibility 1.34, no alpha gate), the operator Gt is refused in kube's words,
//     and an update that leaves a stored Gt as it is passes (kube's ratcheting);
//   - a build of release 1.36 (--binary-version) does not know the 1.37 field at all.
func TestVersionedFieldsAndValidation(t *testing.T) {
	t.Parallel()
	older, newer := releases(t) // 1.36, 1.37
	// Both features are alpha in 1.37: kube drops evictionResponders and refuses Gt
	// unless their gates are on (and no alpha gate may be on while emulating).
	alphaGates := []string{"EvictionRequestAPI=true,TaintTolerationComparisonOperators=true"}
	c := harness.Start(t, 1, harness.WithServerOptions(func(_ int, o *controlplane.Options) { o.Compatibility.FeatureGates = alphaGates }))
	s := c.Servers[0]
	responders := map[string]interface{}{"evictionResponders": []interface{}{map[string]interface{}{"name": "example.com/drain", "priority": int64(1000)}}}
	gt := map[string]interface{}{"tolerations": []interface{}{map[string]interface{}{"key": "size", "operator": "Gt", "value": "3"}}}

	// Default: binary 1.37, minimum compatibility 1.36.
	dyn := s.Dynamic(t)
	_, err := createDeployment(t, dyn, fieldsDeployment("new-field", responders))
	wantInvalidCause(t, err, "Forbidden", "spec.template.spec.evictionResponders",
		"apps/v1 field introduced in release 1.37: the servers stay readable by release 1.36 (--min-compatibility-version)")
	if _, err := createDeployment(t, dyn, fieldsDeployment("gt", gt)); err != nil {
		t.Fatalf("toleration operator Gt at minimum compatibility %s: %v", older, err)
	}
	// The enums are Kubernetes': "" is an unset optional field (an operator "" is
	// Equal, an effect "" every effect), a value outside the constants is refused.
	blank := map[string]interface{}{"tolerations": []interface{}{map[string]interface{}{"key": "size", "operator": "", "effect": ""}}}
	if _, err := createDeployment(t, dyn, fieldsDeployment("blank", blank)); err != nil {
		t.Fatalf("a toleration whose operator and effect are unset: %v", err)
	}
	bogus := map[string]interface{}{"tolerations": []interface{}{map[string]interface{}{"key": "size", "operator": "Within"}}}
	_, err = createDeployment(t, dyn, fieldsDeployment("bogus", bogus))
	wantInvalidCause(t, err, "Unsupported value", "spec.template.spec.tolerations[0].operator", `"Within"`)

	// Emulating 1.35: minimum compatibility 1.34, which refuses Gt.
	s.Options.Compatibility.EmulationVersion = []string{"1.35"}
	s.Options.Compatibility.FeatureGates = nil
	s.Restart(t)
	dyn = s.Dynamic(t)
	_, err = createDeployment(t, dyn, fieldsDeployment("gt-old", gt))
	// kube's words: the gate refuses Gt, the message lists every operator there is.
	wantInvalidCause(t, err, "Unsupported value", "spec.template.spec.tolerations[0].operator", `Unsupported value: "Gt"`)
	cur, err := dyn.Resource(deploymentsGVR).Namespace("default").Get(t.Context(), "gt", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(cur.Object, int64(2), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(deploymentsGVR).Namespace("default").Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Errorf("an update leaving the stored operator Gt as it is, at minimum compatibility 1.34: %v", err)
	}

	// Minimum compatibility 1.37: the new field is writable.
	s.Options.Compatibility.EmulationVersion = nil
	s.Options.Compatibility.FeatureGates = alphaGates
	s.Options.Compatibility.MinCompatibilityVersion = []string{newer}
	s.Restart(t)
	dyn = s.Dynamic(t)
	if _, err := createDeployment(t, dyn, fieldsDeployment("new-field", responders)); err != nil {
		t.Fatalf("a %s field at minimum compatibility %s: %v", newer, newer, err)
	}

	// Back to minimum compatibility 1.36 (a compatibility rollback): the object keeps
	// its field and stays updatable; a change of the field is refused, its removal not.
	s.Options.Compatibility.MinCompatibilityVersion = nil
	s.Restart(t)
	dyn = s.Dynamic(t)
	res := dyn.Resource(deploymentsGVR).Namespace("default")
	cur, err = res.Get(t.Context(), "new-field", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedSlice(cur.Object, "spec", "template", "spec", "evictionResponders"); !found {
		t.Fatalf("the stored field is not served: %v", cur.Object["spec"])
	}
	_ = unstructured.SetNestedField(cur.Object, int64(3), "spec", "replicas")
	if cur, err = res.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("an update leaving the %s field as it is: %v", newer, err)
	}
	_ = unstructured.SetNestedSlice(cur.Object, []interface{}{map[string]interface{}{"name": "example.com/drain", "priority": int64(2000)}},
		"spec", "template", "spec", "evictionResponders")
	_, err = res.Update(t.Context(), cur, metav1.UpdateOptions{})
	wantInvalidCause(t, err, "Forbidden", "spec.template.spec.evictionResponders", "introduced in release 1.37")
	unstructured.RemoveNestedField(cur.Object, "spec", "template", "spec", "evictionResponders")
	if _, err := res.Update(t.Context(), cur, metav1.UpdateOptions{}); err != nil {
		t.Errorf("removing the %s field: %v", newer, err)
	}

	// A build of 1.36 does not know the field.
	s.Options.Compatibility.BinaryVersion = older
	s.Options.Compatibility.FeatureGates = nil
	s.Restart(t)
	dyn = s.Dynamic(t)
	_, err = dyn.Resource(deploymentsGVR).Namespace("default").Create(t.Context(), fieldsDeployment("old-build", responders),
		metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `unknown field "spec.template.spec.evictionResponders"`) {
		t.Errorf("a %s field on a build of %s: %v, want unknown field", newer, older, err)
	}
}

func createDeployment(t *testing.T, dyn dynamic.Interface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t.Helper()
	return dyn.Resource(deploymentsGVR).Namespace("default").Create(t.Context(), obj, metav1.CreateOptions{})
}

// wantInvalidCause checks that err is a 422 with a cause of type reason at field whose
// message contains detail.
func wantInvalidCause(t *testing.T, err error, reason, field, detail string) {
	t.Helper()
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errorsAs(err, &status) {
		t.Fatalf("%v, want 422 Invalid", err)
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == field && strings.Contains(cause.Message, reason) && strings.Contains(cause.Message, detail) {
			return
		}
	}
	t.Fatalf("no %s cause at %s saying %q: %+v", reason, field, detail, status.Status().Details.Causes)
}
