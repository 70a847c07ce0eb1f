package builtin_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/util/proto/validation"
	kubectlopenapi "k8s.io/kubectl/pkg/util/openapi"
	"sigs.k8s.io/yaml"

	"github.com/concordproject/concord/openapi"
)

// servedDocuments serves the documents of a default server's built-in resources.
func servedDocuments(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	svc := openapi.New(builtinRegistry(t))
	svc.InstallV2(mux)
	svc.InstallV3(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// kubectl's client-side validation (what it runs before create and apply against a
// server whose documents do not offer fieldValidation) reads the v2 document of the
// built-in resources, as kube's models, and accepts ordinary manifests, refusing
// unknown fields and ill-typed values.
func TestKubectlValidatesBuiltinManifests(t *testing.T) {
	srv := servedDocuments(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+openapi.V2Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	doc := &openapi_v2.Document{}
	if err := proto.Unmarshal(body, doc); err != nil {
		t.Fatal(err)
	}
	resources, err := kubectlopenapi.NewOpenAPIData(doc)
	if err != nil {
		t.Fatalf("kubectl cannot read the v2 document: %v", err)
	}
	for _, tc := range []struct {
		name, manifest, wantErr string
	}{
		{"deployment", deploymentManifest, ""},
		{"pod", podManifest, ""},
		{"service", serviceManifest, ""},
		{"cronjob", cronJobManifest, ""},
		{"ingress", ingressManifest, ""},
		{"hpa", hpaManifest, ""},
		{"unknown field", strings.Replace(deploymentManifest, "replicas: 2", "replicaz: 2", 1), `unknown field "replicaz"`},
		{"ill-typed", strings.Replace(deploymentManifest, "replicas: 2", "replicas: two", 1), "spec.replicas"},
		{"missing required", strings.Replace(podManifest, "  - name: web\n", "  - ports: []\n", 1), `missing required field "name"`},
	} {
		err := validate(resources, tc.manifest)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: kubectl refuses an ordinary manifest: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: kubectl's validation says %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

// validate validates a manifest as kubectl's client-side validation does
// (k8s.io/kubectl/pkg/validation): against the model of its kind, found by the
// models' x-kubernetes-group-version-kind.
func validate(resources kubectlopenapi.Resources, manifest string) error {
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
		return err
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return err
	}
	model := resources.LookupResource(gv.WithKind(kind))
	if model == nil {
		return fmt.Errorf("no model of %s %s", apiVersion, kind)
	}
	return errors.Join(validation.ValidateModel(obj, model, kind)...)
}

const deploymentManifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 25%}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80, protocol: TCP}]
        resources: {limits: {cpu: 500m, memory: 128Mi}}
        readinessProbe: {httpGet: {path: /, port: http}, periodSeconds: 5}
`

const podManifest = `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: web
    image: nginx
    env: [{name: A, value: b}, {name: C, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {sizeLimit: 1Gi}}]
  tolerations: [{key: k, operator: Exists, effect: NoSchedule}]
`

const serviceManifest = `apiVersion: v1
kind: Service
metadata: {name: s}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}, {name: https, port: 443, targetPort: 8443, protocol: TCP}]
`

const cronJobManifest = `apiVersion: batch/v1
kind: CronJob
metadata: {name: c}
spec:
  schedule: "*/5 * * * *"
  concurrencyPolicy: Forbid
  jobTemplate:
    spec:
      backoffLimit: 2
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: c, image: busybox, command: [echo, hi]}]
`

const ingressManifest = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: i}
spec:
  ingressClassName: nginx
  tls: [{hosts: [example.com], secretName: tls}]
  rules:
  - host: example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
`

const hpaManifest = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: h}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
`

// refs finds the references to models in a v3 document.
var refs = regexp.MustCompile(`"\$ref":"#/components/schemas/([^"]+)"`)

// Every group-version a default server serves has its v3 document, without unresolved
// references, and the model of each of its kinds that kube's semantics configure is
// kube's: described, as kube's generated models all are.
func TestBuiltinDocuments(t *testing.T) {
	reg := builtinRegistry(t)
	srv := servedDocuments(t)
	fetch := func(path string) []byte {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		return body
	}
	described, references := 0, 0
	for _, res := range reg.Resources() {
		for _, v := range res.ServedVersions() {
			gv := res.GroupVersion(v)
			path := openapi.V3Path + "/apis/" + gv.String()
			if gv.Group == "" {
				path = openapi.V3Path + "/api/" + gv.Version
			}
			body := fetch(path)
			var doc struct {
				Components struct {
					Schemas map[string]struct {
						Description string `json:"description"`
						GVK         []any  `json:"x-kubernetes-group-version-kind"`
					} `json:"schemas"`
				} `json:"components"`
			}
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			for _, ref := range refs.FindAllSubmatch(body, -1) {
				references++
				if _, ok := doc.Components.Schemas[strings.ReplaceAll(string(ref[1]), "~1", "/")]; !ok {
					t.Errorf("%s: unresolved reference to %s", path, ref[1])
				}
			}
			if res.GoDefinitions == nil {
				continue
			}
			found := false
			for _, m := range doc.Components.Schemas {
				if len(m.GVK) == 1 && fmt.Sprint(m.GVK[0]) == fmt.Sprint(map[string]any{"group": gv.Group, "version": gv.Version, "kind": res.Names.Kind}) {
					found = true
					if m.Description == "" {
						t.Errorf("%s %s: the model of its kind has no description", gv, res.Names.Kind)
					}
					described++
				}
			}
			if !found {
				t.Errorf("%s: no model of kind %s", path, res.Names.Kind)
			}
		}
	}
	if references == 0 {
		t.Error("no reference found: is the pattern right?")
	}
	t.Logf("%d kinds described as kube describes them; %d references resolved", described, references)
}
