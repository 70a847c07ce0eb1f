package integration

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// mutatingadmissionpolicies change storage version between 1.36 and 1.37 in the
// catalog (v1beta1 while 1.35 must still read the data, v1 after), which makes them
// the witness of the KEP's rollback promise.
var maps = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"}

const mapKey = "/registry/admissionregistration.k8s.io/mutatingadmissionpolicies/"

func etcdAPIVersion(t *testing.T, c *harness.Cluster, key string) string {
	t.Helper()
	resp, err := c.EtcdClient.Get(t.Context(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("reading %s from etcd: %v (%d keys)", key, err, len(resp.Kvs))
	}
	var m struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &m); err != nil {
		t.Fatal(err)
	}
	return m.APIVersion
}

// policy is a MutatingAdmissionPolicy that validation accepts (it labels
// ConfigMaps), in apiVersion.
func policy(name, apiVersion string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": apiVersion, "kind": "MutatingAdmissionPolicy",
		"metadata": map[string]interface{}{"name": name},
		"spec": map[string]interface{}{
			"matchConstraints": map[string]interface{}{"resourceRules": []interface{}{map[string]interface{}{
				"apiGroups": []interface{}{""}, "apiVersions": []interface{}{"v1"}, "resources": []interface{}{"configmaps"}, "operations": []interface{}{"CREATE"},
			}}},
			"mutations": []interface{}{map[string]interface{}{"patchType": "ApplyConfiguration", "applyConfiguration": map[string]interface{}{
				"expression": `Object{metadata: Object.metadata{labels: {"policy": "` + name + `"}}}`,
			}}},
			"reinvocationPolicy": "Never",
		},
	}}
}

func setCompat(binary, emulation string, runtimeConfig ...string) func(int, *controlplane.Options) {
	return func(_ int, o *controlplane.Options) {
		o.Compatibility.BinaryVersion = binary
		o.Compatibility.EmulationVersion = nil
		if emulation != "" {
			o.Compatibility.EmulationVersion = []string{emulation}
		}
		o.Compatibility.RuntimeConfig = runtimeConfig
	}
}

// Data written at emulation N-1 reads after going back to binary N-1, and even to
// N-2 (the minimum compatibility version); data written at emulation N does not read
// on N-2, which is what the rule protects against.
func TestRollback(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, harness.WithServerOptions(setCompat("", "1.36")))
	s := c.Servers[0]
	if _, err := s.Dynamic(t).Resource(maps).Create(t.Context(), policy("safe", "admissionregistration.k8s.io/v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := etcdAPIVersion(t, c, mapKey+"safe"); got != "admissionregistration.k8s.io/v1beta1" {
		t.Fatalf("emulating 1.36 stored %s, want v1beta1 (1.35 cannot read v1)", got)
	}

	// Back to a 1.36 build: it serves v1 and decodes v1beta1.
	s.Stop(t)
	setCompat("1.36", "")(0, s.Options)
	s.Restart(t)
	if _, err := s.Dynamic(t).Resource(maps).Get(t.Context(), "safe", metav1.GetOptions{}); err != nil {
		t.Fatalf("binary 1.36 reading what emulation 1.36 wrote: %v", err)
	}
	// Down to the minimum compatibility version, 1.35, which serves only v1beta1.
	s.Stop(t)
	setCompat("1.35", "", "admissionregistration.k8s.io/v1beta1=true")(0, s.Options)
	s.Restart(t)
	v1beta1 := maps
	v1beta1.Version = "v1beta1"
	if _, err := s.Dynamic(t).Resource(v1beta1).Get(t.Context(), "safe", metav1.GetOptions{}); err != nil {
		t.Fatalf("binary 1.35 reading what emulation 1.36 wrote: %v", err)
	}

	// The unsafe path: a 1.37 server at emulation 1.37 writes v1, which 1.35 cannot read.
	s.Stop(t)
	setCompat("", "")(0, s.Options)
	s.Restart(t)
	if _, err := s.Dynamic(t).Resource(maps).Create(t.Context(), policy("unsafe", "admissionregistration.k8s.io/v1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := etcdAPIVersion(t, c, mapKey+"unsafe"); got != "admissionregistration.k8s.io/v1" {
		t.Fatalf("1.37 stored %s, want v1", got)
	}
	s.Stop(t)
	setCompat("1.35", "", "admissionregistration.k8s.io/v1beta1=true")(0, s.Options)
	s.Restart(t)
	_, err := s.Dynamic(t).Resource(v1beta1).Get(t.Context(), "unsafe", metav1.GetOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `stored as "admissionregistration.k8s.io/v1"`) {
		t.Fatalf("1.35 reading v1 data: %v, want a 500 naming the stored version", err)
	}
}

// Binary 1.37 started at emulation 1.34 steps up one minor at a time; every step serves,
// reports its versions, keeps what earlier steps wrote, and stores by the rule.
func TestSkipLevelUpgrade(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, harness.WithServerOptions(setCompat("", "1.34")))
	s := c.Servers[0]
	wantStored := map[string]string{"1.36": "admissionregistration.k8s.io/v1beta1", "1.37": "admissionregistration.k8s.io/v1"}
	var written []string
	for _, step := range []string{"1.34", "1.35", "1.36", "1.37"} {
		if step != "1.34" {
			s.Stop(t)
			setCompat("", step)(0, s.Options)
			s.Restart(t)
		}
		info, err := s.Clientset(t).Discovery().ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		if got := info.EmulationMajor + "." + info.EmulationMinor; got != step || info.Minor != "37" {
			t.Fatalf("step %s: /version says binary %s.%s emulating %s", step, info.Major, info.Minor, got)
		}
		checkVersionInfo(t, info, step)
		cms := s.Clientset(t).CoreV1().ConfigMaps("default")
		for _, name := range written {
			if _, err := cms.Get(t.Context(), name, metav1.GetOptions{}); err != nil {
				t.Fatalf("step %s lost %s: %v", step, name, err)
			}
		}
		name := "step-" + strings.ReplaceAll(step, ".", "-")
		if _, err := cms.Create(t.Context(), configMap(name, nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("step %s: %v", step, err)
		}
		written = append(written, name)
		_, err = s.Dynamic(t).Resource(maps).Create(t.Context(), policy(name, "admissionregistration.k8s.io/v1"), metav1.CreateOptions{})
		if want, served := wantStored[step]; served {
			if err != nil {
				t.Fatalf("step %s: creating a policy: %v", step, err)
			}
			if got := etcdAPIVersion(t, c, mapKey+name); got != want {
				t.Fatalf("step %s stored %s, want %s", step, got, want)
			}
		} else if !apierrors.IsNotFound(err) {
			t.Fatalf("step %s serves mutatingadmissionpolicies v1 before it exists: %v", step, err)
		}
	}
}

func checkVersionInfo(t *testing.T, info *version.Info, emulation string) {
	t.Helper()
	if info.MinCompatibilityMajor == "" || info.GitVersion == "" || info.GoVersion == "" {
		t.Fatalf("/version at emulation %s lacks fields: %+v", emulation, info)
	}
}
