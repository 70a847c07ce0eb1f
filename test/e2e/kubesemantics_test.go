package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
)

// invalidManifests are manifests kube-apiserver 1.37.2 refuses (422), with a field
// cause of its answer each: the reproductions of issue 37, through kubectl.
var invalidManifests = []struct{ name, manifest, cause string }{
	{"deployment", `apiVersion: apps/v1
kind: Deployment
metadata: {name: bad}
spec:
  replicas: -1
  selector: {matchLabels: {app: x}}
  template:
    metadata: {labels: {app: x}}
    spec:
      containers: [{name: Bad_Name, image: "", ports: [{containerPort: 70000}]}]
`, "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"},
	{"hpa", `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: bad}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 5
  maxReplicas: 2
`, "spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"},
	{"job", `apiVersion: batch/v1
kind: Job
metadata: {name: bad}
spec:
  parallelism: -2
  template:
    spec:
      restartPolicy: Always
      containers: [{name: c, image: busybox}]
`, `spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
	{"pdb", `apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: bad}
spec:
  minAvailable: 1
  maxUnavailable: 1
  selector: {matchLabels: {app: x}}
`, "spec: Invalid value:"},
	{"podtemplate", `apiVersion: v1
kind: PodTemplate
metadata: {name: bad}
template:
  spec:
    containers: [{name: c, image: busybox, lifecycle: {stopSignal: SIGTERM}}]
`, "template.spec.containers[0].lifecycle.stopSignal: Forbidden: may not be set for containers with empty `spec.os.name`"},
}

// TestKubernetesSemantics: what kube-apiserver refuses, Concord refuses with kube's
// causes; what it defaults and converts, Concord defaults and converts alike; kubectl
// prints kube's columns.
func TestKubernetesSemantics(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 1, harness.WithStorageMigration(), harness.WithServerOptions(func(_ int, o *controlplane.Options) {
		o.Compatibility.FeatureGates = []string{"ContainerStopSignals=true"}
	}))
	k := newKubectl(t, c.Servers[0].KubeconfigPath)
	for _, m := range invalidManifests {
		out, err := k.run(t, m.manifest, "apply", "-f", "-")
		if err == nil || !strings.Contains(out, "is invalid") || !strings.Contains(out, m.cause) {
			t.Errorf("%s: kubectl apply answered %v:\n%s\nwant 422 with %q", m.name, err, out, m.cause)
		}
	}

	// Server-side apply of a Deployment whose ports omit protocol (a list-map key kube
	// defaults), twice unchanged.
	deployment := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx, ports: [{containerPort: 80}]}]
`
	for range 2 {
		contains(t, k.must(t, deployment, "apply", "--server-side", "-f", "-"), "deployment.apps/web serverside-applied")
	}
	contains(t, k.must(t, "", "get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].ports[0].protocol} {.spec.strategy.type} {.metadata.generation}"),
		"TCP RollingUpdate 1")

	// A ConfigMap has no generation (kube's strategy sets none).
	k.must(t, "", "create", "configmap", "plain", "--from-literal=a=b")
	if out := k.must(t, "", "get", "configmap", "plain", "-o", "jsonpath={.metadata.generation}"); out != "" {
		t.Errorf("a ConfigMap's generation: %q, want none", out)
	}

	// autoscaling/v1's CPU target is autoscaling/v2's CPU metric, both ways.
	k.must(t, `apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: v1cpu}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 4
  targetCPUUtilizationPercentage: 70
`, "apply", "-f", "-")
	contains(t, k.must(t, "", "get", "horizontalpodautoscalers.v2.autoscaling", "v1cpu", "-o",
		"jsonpath={.spec.metrics[0].resource.name}={.spec.metrics[0].resource.target.averageUtilization}"), "cpu=70")
	k.must(t, `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: v2cpu}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 4
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 55}}
`, "apply", "-f", "-")
	contains(t, k.must(t, "", "get", "horizontalpodautoscalers.v1.autoscaling", "v2cpu", "-o", "jsonpath={.spec.targetCPUUtilizationPercentage}"), "55")

	// kubectl certificate approve writes the Approved condition through the approval
	// subresource; the CONDITION column shows it.
	k.must(t, `apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: demo}
spec:
  signerName: example.com/signer
  usages: [client auth]
  request: `+base64.StdEncoding.EncodeToString(certificateRequestPEM(t))+`
`, "apply", "-f", "-")
	contains(t, k.must(t, "", "certificate", "approve", "demo"), "certificatesigningrequest.certificates.k8s.io/demo approved")
	contains(t, k.must(t, "", "get", "csr", "demo"), "SIGNERNAME", "example.com/signer", "Approved")

	// kube's columns.
	contains(t, k.must(t, "", "get", "hpa"), "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "Deployment/web", "cpu: <unknown>/70%")
	contains(t, k.must(t, "", "get", "deployment", "web", "-o", "wide"), "READY", "UP-TO-DATE", "CONTAINERS", "IMAGES", "SELECTOR", "app=web")
}

// certificateRequestPEM is a PEM certificate request for CN demo.
func certificateRequestPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "demo"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}
