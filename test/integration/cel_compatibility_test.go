package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
)

// celIncludesRule uses the lists library's includes, which the CEL environment of
// Kubernetes 1.37 introduced: a new rule may use it only at a minimum compatibility
// version of 1.37.
const celIncludesRule = "[1, 2, 3].includes(self.size)"

// celRulePath is where the CRD validation reports the first rule on spec of a
// definition with a single schema.
const celRulePath = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[%d].rule"

// celGadgetsCRD is a cluster-scoped definition of cel.example.com gadgets whose spec.size
// must pass rules.
func celGadgetsCRD(rules ...apiextensionsv1.ValidationRule) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.cel.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "cel.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {
							Type:         "object",
							Properties:   map[string]apiextensionsv1.JSONSchemaProps{"size": {Type: "integer"}, "count": {Type: "integer"}},
							XValidations: rules,
						},
					},
				}},
			}},
		},
	}
}

func celGadget(name string, size int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "cel.example.com/v1", "kind": "Gadget",
		"metadata": map[string]interface{}{"name": name},
		"spec":     map[string]interface{}{"size": size, "count": int64(1)},
	}}
}

// celSetVersions sets a server's emulation and minimum compatibility versions
// ("" for the default).
func celSetVersions(emulation, minCompat string) func(int, *controlplane.Options) {
	return func(_ int, o *controlplane.Options) {
		o.Compatibility.EmulationVersion, o.Compatibility.MinCompatibilityVersion = nil, nil
		if emulation != "" {
			o.Compatibility.EmulationVersion = []string{emulation}
		}
		if minCompat != "" {
			o.Compatibility.MinCompatibilityVersion = []string{minCompat}
		}
	}
}

// New x-kubernetes-validations rules compile in the CEL environment of the server's
// minimum compatibility version; stored rules, and the evaluation of custom resources,
// with every library the binary has. Two servers of one cluster (one process) run at
// different versions and each decides by its own.
func TestCELEnvironmentFollowsMinCompatibility(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, harness.WithServerOptions(func(i int, o *controlplane.Options) {
		if i == 0 {
			celSetVersions("1.37", "1.37")(i, o)
		}
	}))
	newer, older := c.Servers[0], c.Servers[1] // min compatibility 1.37 and 1.36 (the default)
	ctx := t.Context()
	rule := apiextensionsv1.ValidationRule{Rule: celIncludesRule, Message: "size must be 1, 2 or 3"}

	// (1) Below 1.37, a definition using includes is refused, in the compiler's words.
	_, err := crdClient(t, older).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, celGadgetsCRD(rule), metav1.CreateOptions{})
	celWantRefused(t, err, 0, "1.36")

	// (2) At 1.37 it is created, and both servers enforce the rule on custom resources.
	crd, err := crdClient(t, newer).ApiextensionsV1().CustomResourceDefinitions().Create(ctx, celGadgetsCRD(rule), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating at min compatibility 1.37: %v", err)
	}
	gvr := gvrOf(crd, "v1")
	waitServedEverywhere(t, c, gvr, time.Now())
	celCheckGadgets(t, c, gvr, "before")

	// (3) Rollback: the 1.37 server restarts emulating 1.36 (min compatibility 1.35).
	newer.Stop(t)
	celSetVersions("1.36", "")(0, newer.Options)
	newer.Restart(t)
	waitServedEverywhere(t, c, gvr, time.Now())
	celCheckGadgets(t, c, gvr, "after")

	for _, s := range c.Servers {
		crds := crdClient(t, s).ApiextensionsV1().CustomResourceDefinitions()
		// An unrelated change of the definition is accepted: the stored rule keeps every library.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			spec := d.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			count := spec.Properties["count"]
			count.Description = fmt.Sprintf("changed by server %d", s.Index)
			spec.Properties["count"] = count
			d.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
			_, err = crds.Update(ctx, d, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("server %d: unrelated update of the definition: %v", s.Index, err)
		}
		// A new rule using includes is refused.
		_, err = updateRetrying(ctx, crds.Get, crds.Update, crd.Name, func(d *apiextensionsv1.CustomResourceDefinition) {
			spec := d.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
			spec.XValidations = append(spec.XValidations, apiextensionsv1.ValidationRule{Rule: "[1, 2].includes(self.count)"})
			d.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		})
		celWantRefused(t, err, 1, map[int]string{0: "1.35", 1: "1.36"}[s.Index])
	}
}

// celWantRefused checks that err is a 422 refusing rule i of gadgets for includes, at
// minimum compatibility version v.
func celWantRefused(t *testing.T, err error, i int, v string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want 422 Invalid", err)
	}
	field := fmt.Sprintf(celRulePath, i)
	if !hasCause(err, field, "undeclared reference to 'includes'") || !hasCause(err, field, "minimum compatibility version "+v) {
		t.Fatalf("causes %q, want %s: ...undeclared reference to 'includes'... minimum compatibility version %s", statusCauses(err), field, v)
	}
}

// celCheckGadgets checks that every server creates gadgets the rule accepts and refuses
// the others with its message.
func celCheckGadgets(t *testing.T, c *harness.Cluster, gvr schema.GroupVersionResource, phase string) {
	t.Helper()
	for _, s := range c.Servers {
		gadgets := s.Dynamic(t).Resource(gvr)
		name := fmt.Sprintf("%s-%d", phase, s.Index)
		if _, err := gadgets.Create(t.Context(), celGadget(name, 2), metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s, server %d: a gadget the rule accepts: %v", phase, s.Index, err)
		}
		_, err := gadgets.Create(t.Context(), celGadget(name+"-bad", 5), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !hasCause(err, "spec", "size must be 1, 2 or 3") {
			t.Fatalf("%s, server %d: a gadget the rule refuses: %v %q", phase, s.Index, err, statusCauses(err))
		}
	}
}
