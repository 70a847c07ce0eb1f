package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// withGates starts servers at binary version binary ("": the catalog's newest) with
// the given --feature-gates and --runtime-config.
func withGates(binary string, gates []string, runtimeConfig ...string) harness.Option {
	return harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		o.Compatibility.BinaryVersion = binary
		o.Compatibility.FeatureGates = gates
		o.Compatibility.RuntimeConfig = runtimeConfig
	})
}

// Every feature gate Concord lists switches what it names (APIServerIdentity and
// StorageVersionAPI are tested in identity_test.go and storageversion_test.go).
func TestFeatureGatesMeanWhatTheySay(t *testing.T) {
	t.Parallel()
	t.Run("MutatingAdmissionPolicy", testMutatingAdmissionPolicyGate)
	t.Run("WatchList", testWatchListGate)
	t.Run("CRDValidationRatcheting", testCRDValidationRatchetingGate)
}

// On, the API is served and policies mutate; off, the API is not served by default,
// and when --runtime-config serves it anyway, its policies mutate nothing.
func testMutatingAdmissionPolicyGate(t *testing.T) {
	// mutated reports whether the policy mutates a deployment within d: policies are
	// read by informers.
	mutated := func(t *testing.T, s *harness.Server, d time.Duration) bool {
		t.Helper()
		admin := s.Clientset(t)
		policyNamespace(t, admin, "gated")
		policy := &admissionregistrationv1.MutatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "replicas"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchConstraints: inNamespace("gated", "apps", "v1", "deployments"),
				ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
				Mutations: []admissionregistrationv1.Mutation{{
					PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
					ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{spec: Object.spec{replicas: 1337}}`},
				}},
			},
		}
		if _, err := admin.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(t.Context(), policy, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "replicas"},
			Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "replicas"},
		}
		if _, err := admin.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			d, err := admin.AppsV1().Deployments("gated").Create(t.Context(), replicated("web", 1), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Fatal(err)
			}
			if *d.Spec.Replicas == 1337 {
				return true
			}
			time.Sleep(100 * time.Millisecond)
		}
		return false
	}

	t.Run("on", func(t *testing.T) {
		s := harness.Start(t, 1).Servers[0]
		if !mutated(t, s, 20*time.Second) {
			t.Error("the policy did not mutate with MutatingAdmissionPolicy on")
		}
	})
	t.Run("off", func(t *testing.T) {
		s := harness.Start(t, 1, withGates("", []string{"MutatingAdmissionPolicy=false"})).Servers[0]
		for _, r := range []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"} {
			if gvr := maps.GroupVersion().WithResource(r); servedResource(t, s, gvr) != nil {
				t.Errorf("%s is discovered with MutatingAdmissionPolicy off", gvr)
			}
		}
		_, err := s.Clientset(t).AdmissionregistrationV1().MutatingAdmissionPolicies().List(t.Context(), metav1.ListOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("listing MutatingAdmissionPolicies with the gate off: %v, want 404 NotFound", err)
		}
	})
	t.Run("off, API switched on", func(t *testing.T) {
		s := harness.Start(t, 1, withGates("", []string{"MutatingAdmissionPolicy=false"},
			"admissionregistration.k8s.io/v1/mutatingadmissionpolicies=true", "admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings=true")).Servers[0]
		if mutated(t, s, 5*time.Second) { // the time the policy would take at most, lightly loaded
			t.Error("the policy mutated with MutatingAdmissionPolicy off")
		}
	})
}

// On, a watch with sendInitialEvents streams the starting state and its end bookmark;
// off, it is refused as kube-apiserver refuses it (422, Invalid ListOptions).
func testWatchListGate(t *testing.T) {
	opts := metav1.ListOptions{Watch: true, SendInitialEvents: ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
	start := func(t *testing.T, gates ...string) (*harness.Server, *corev1.ConfigMap) {
		s := harness.Start(t, 1, withGates("", gates)).Servers[0]
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "start"}}
		cm, err := s.Clientset(t).CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s, cm
	}

	t.Run("on", func(t *testing.T) {
		s, cm := start(t)
		w, err := s.Clientset(t).CoreV1().ConfigMaps("default").Watch(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		var added []string
		timeout := time.After(20 * time.Second)
		for {
			select {
			case ev := <-w.ResultChan():
				switch ev.Type {
				case watch.Added:
					added = append(added, ev.Object.(*corev1.ConfigMap).Name)
				case watch.Bookmark:
					if ev.Object.(*corev1.ConfigMap).Annotations[metav1.InitialEventsAnnotationKey] != "true" {
						continue
					}
					if len(added) != 1 || added[0] != cm.Name {
						t.Errorf("initial events %v, want [%s]", added, cm.Name)
					}
					return
				default:
					t.Fatalf("unexpected event %s %v", ev.Type, ev.Object)
				}
			case <-timeout:
				t.Fatalf("no end-of-initial-events bookmark; initial events %v", added)
			}
		}
	})
	t.Run("off", func(t *testing.T) {
		s, _ := start(t, "WatchList=false")
		_, err := s.Clientset(t).CoreV1().ConfigMaps("default").Watch(t.Context(), opts)
		const want = `ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled`
		var status apierrors.APIStatus
		if !apierrors.IsInvalid(err) || err.Error() != want {
			t.Fatalf("watch with sendInitialEvents and WatchList off: %v, want 422 %q", err, want)
		}
		if ok := apierrors.ReasonForError(err) == metav1.StatusReasonInvalid; !ok {
			t.Errorf("reason %s", apierrors.ReasonForError(err))
		}
		if status, _ = err.(apierrors.APIStatus); status.Status().Code != http.StatusUnprocessableEntity {
			t.Errorf("code %d, want 422", status.Status().Code)
		}
		// A watch without it is served as ever.
		w, err := s.Clientset(t).CoreV1().ConfigMaps("default").Watch(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.Stop()
	})
}

// CRDValidationRatcheting is GA and locked on from 1.33, so it can be switched off only
// on a build of an older release (--binary-version 1.32): there an update that leaves
// a value invalid under a tightened schema is refused; on, it passes.
func testCRDValidationRatchetingGate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		gate    string
		refused bool
	}{{"on", "CRDValidationRatcheting=true", false}, {"off", "CRDValidationRatcheting=false", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := harness.Start(t, 1, withGates("1.32", []string{tc.gate}))
			s := c.Servers[0]
			crds := crdClient(t, s).ApiextensionsV1().CustomResourceDefinitions()
			crd, err := crds.Create(t.Context(), ratchetCRD(), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			gvr := gvrOf(crd, "v1")
			waitServedEverywhere(t, c, gvr, crd.CreationTimestamp.Time)
			widgets := s.Dynamic(t).Resource(gvr).Namespace("default")
			widget := func(image string) *unstructured.Unstructured {
				return &unstructured.Unstructured{Object: map[string]interface{}{
					"apiVersion": gvr.GroupVersion().String(), "kind": "Widget", "metadata": map[string]interface{}{"name": "w"},
					"spec": map[string]interface{}{"image": image, "replicas": int64(1)},
				}}
			}
			stored, err := widgets.Create(t.Context(), widget("a-long-image"), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}

			// Tighten the schema; wait until it is in force.
			if _, err := updateRetrying(t.Context(), crds.Get, crds.Update, crd.Name, func(crd *apiextensionsv1.CustomResourceDefinition) {
				spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
				image := spec.Properties["image"]
				image.MaxLength = ptr.To[int64](3)
				spec.Properties["image"] = image
				crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
			}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the tightened schema", func() (bool, error) {
				fresh := widget("a-long-image")
				fresh.SetName("fresh")
				_, err := widgets.Create(t.Context(), fresh, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				return apierrors.IsInvalid(err), nil
			})

			// An update that leaves the now invalid image alone.
			if err := unstructured.SetNestedField(stored.Object, int64(2), "spec", "replicas"); err != nil {
				t.Fatal(err)
			}
			_, err = widgets.Update(t.Context(), stored, metav1.UpdateOptions{})
			switch {
			case tc.refused && (!apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.image: Too long")):
				t.Errorf("update with ratcheting off: %v, want 422 spec.image: Too long", err)
			case !tc.refused && err != nil:
				t.Errorf("update with ratcheting on: %v, want it to pass", err)
			}
		})
	}
}

// ratchetCRD defines Widgets (ratchet.example.com/v1), spec.image and spec.replicas.
func ratchetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.ratchet.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "ratchet.example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"image": {Type: "string"}, "replicas": {Type: "integer"},
						}},
					},
				}},
			}},
		},
	}
}
