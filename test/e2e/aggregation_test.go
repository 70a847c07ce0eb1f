package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/storageversion/publisher"
	"github.com/concordproject/concord/test/kubepeer"
	"github.com/concordproject/concord/test/ports"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// sampleRelease is the release of k8s.io/sample-apiserver the test runs.
const sampleRelease = "1.37.2"

// An aggregated API server nobody here wrote, k8s.io/sample-apiserver built from its
// Go module with its own etcd, registered through an APIService: it reads the
// request-header configuration Concord publishes and delegates authentication and
// authorization to Concord; through the concord binary, kubectl lists its resources
// (discovery), explains them (OpenAPI), creates and reads flunders (the proxy; the
// storage-version barrier lets them pass).
func TestSampleAPIServer(t *testing.T) {
	t.Parallel()
	setup := startSampleBehindConcord(t)
	k, sample := setup.k, setup.sample
	contains(t, k.must(t, "", "api-resources", "--api-group=wardle.example.com"), "fischers", "wardle.example.com/v1alpha1")

	// A watch streams through the proxy: the creation arrives as it happens.
	cfg := loadKubeconfig(t, setup.kubeconfig)
	dyn := dynamic.NewForConfigOrDie(&rest.Config{Host: cfg.server, BearerToken: cfg.token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.ca}})
	flunders := schema.GroupVersionResource{Group: "wardle.example.com", Version: "v1alpha1", Resource: "flunders"}
	w, err := dyn.Resource(flunders).Namespace("default").Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	k.must(t, flunder, "create", "-f", "-")
	select {
	case ev := <-w.ResultChan():
		if u, ok := ev.Object.(*unstructured.Unstructured); ev.Type != watch.Added || !ok || u.GetName() != "my-flunder" {
			t.Errorf("watch event %s %v, want the flunder ADDED", ev.Type, ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Error("no watch event through the proxy within 10s")
	}
	contains(t, k.must(t, "", "get", "flunders", "-A"), "default", "my-flunder")
	contains(t, k.must(t, "", "get", "flunder", "my-flunder", "-o", "jsonpath={.spec.reference}"), "my-fischer")
	waitKubectl(t, k, "the flunder's OpenAPI", "Flunder", "explain", "flunders")
	contains(t, k.must(t, "", "get", "--raw", "/openapi/v2"), `"/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders"`)
	contains(t, k.must(t, "", "get", "--raw", "/openapi/v3"), `"apis/wardle.example.com/v1alpha1"`)
	k.must(t, "", "delete", "flunder", "my-flunder")
	if out, err := k.run(t, "", "get", "flunder", "my-flunder"); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("a deleted flunder: %v\n%s", err, out)
	}

	// The backend goes: kubectl hears a 503 that names the APIService.
	sample.Stop()
	out, err := k.run(t, "", "get", "flunders", "-A")
	if err == nil || !strings.Contains(out, "v1alpha1.wardle.example.com") {
		t.Errorf("flunders of a stopped backend: %v\n%s", err, out)
	}
}

// sampleSetup is a concord server with the sample-apiserver behind it.
type sampleSetup struct {
	k               *kubectl
	sample          *kubepeer.Sample
	bin, kubeconfig string // the concord binary, and its admin kubeconfig
}

// startSampleBehindConcord starts a concord binary (with extra flags) and the
// sample-apiserver behind it, registered and available.
func startSampleBehindConcord(t *testing.T, flags ...string) *sampleSetup {
	t.Helper()
	bin := buildConcord(t)
	sampleBin, err := kubepeer.Binary("sample-apiserver", sampleRelease)
	if errors.Is(err, kubepeer.ErrNotBuilt) && os.Getenv("CONCORD_CONFORMANCE") != "required" {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "concord")
	logs := process(t, bin, append([]string{"server", "--data-dir", data, "--secure-port", fmt.Sprint(ports.Free(t))}, flags...)...)
	kubeconfig := filepath.Join(data, "admin.kubeconfig")
	waitForFile(t, kubeconfig, logs)
	k := newKubectl(t, kubeconfig)

	// The sample-apiserver runs as a service account with the grants Kubernetes'
	// aggregated servers ask for: the bootstrap Role that reads the request-header
	// configuration, system:auth-delegator, and what its informers read.
	k.must(t, sampleIdentity, "apply", "-f", "-")
	token := strings.TrimSpace(k.must(t, "", "create", "token", "apiserver", "-n", "wardle", "--duration=1h"))
	sampleKubeconfig := filepath.Join(dir, "sample.kubeconfig")
	writeTokenKubeconfig(t, sampleKubeconfig, loadKubeconfig(t, kubeconfig), token)

	etcd := etcdtest.Start(t)
	sample, err := kubepeer.StartSample(t.Context(), kubepeer.SampleOptions{
		Binary: sampleBin, Dir: filepath.Join(dir, "sample"), EtcdServers: etcd.Endpoints(),
		Kubeconfig: sampleKubeconfig, Hosts: []string{"api.wardle.svc"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sample.Stop)

	k.must(t, registration("wardle", sample.Port, "wardle.example.com", "v1alpha1", base64.StdEncoding.EncodeToString(sample.CA)), "apply", "-f", "-")
	waitKubectl(t, k, "the APIService Available", "True",
		"get", "apiservice", "v1alpha1.wardle.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].message}{.status.conditions[?(@.type=="Available")].status}`)
	waitKubectl(t, k, "flunders in discovery", "flunders", "api-resources", "--api-group=wardle.example.com")
	return &sampleSetup{k: k, sample: sample, bin: bin, kubeconfig: kubeconfig}
}

// waitKubectl runs kubectl until its output contains want, for up to 30 s.
func waitKubectl(t *testing.T, k *kubectl, what, want string, args ...string) {
	t.Helper()
	kubectlUntil(t, k, nil, what, func(out string) bool { return strings.Contains(out, want) }, args...)
}

// registration registers a backend behind a Concord: a Service api in namespace ns,
// its EndpointSlice (Concord serves them as data: the endpoint names where the backend
// listens, 127.0.0.1:port) and the APIService of group/version, verified with
// caBundle (base64), or not verified when caBundle is empty.
func registration(ns string, port int, group, version, caBundle string) string {
	tls := "caBundle: " + caBundle
	if caBundle == "" {
		tls = "insecureSkipTLSVerify: true"
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: v1
kind: Service
metadata:
  name: api
  namespace: %[1]s
spec:
  ports:
  - name: https
    port: 443
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: api
  namespace: %[1]s
  labels:
    kubernetes.io/service-name: api
addressType: IPv4
endpoints:
- addresses: ["127.0.0.1"]
ports:
- name: https
  port: %[2]d
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: %[4]s.%[3]s
spec:
  group: %[3]s
  version: %[4]s
  groupPriorityMinimum: 1000
  versionPriority: 15
  service:
    namespace: %[1]s
    name: api
  %[5]s
`, ns, port, group, version, tls)
}

const flunder = `apiVersion: wardle.example.com/v1alpha1
kind: Flunder
metadata:
  name: my-flunder
  namespace: default
spec:
  reference: my-fischer
`

// A concord server runs as an aggregated API server behind another: its own etcd,
// the requests the aggregator forwards authenticated by the aggregator's published
// front-proxy CA (--requestheader-client-ca-file), a custom resource it serves
// listed, created and read through the aggregator with kubectl, and a forged
// X-Remote-User without the front proxy's certificate ignored.
func TestConcordBehindConcord(t *testing.T) {
	t.Parallel()
	bin := buildConcord(t)
	dir := t.TempDir()
	kf, _, caFile := startFront(t, bin, dir)

	back := filepath.Join(dir, "back")
	backPort := ports.Free(t)
	backLogs := process(t, bin, "server", "--data-dir", back, "--secure-port", fmt.Sprint(backPort),
		"--requestheader-client-ca-file", caFile, "--requestheader-allowed-names", "front-proxy-client")
	waitForFile(t, filepath.Join(back, "admin.kubeconfig"), backLogs)
	kb := newKubectl(t, filepath.Join(back, "admin.kubeconfig"))
	kb.must(t, widgetsCRD, "apply", "-f", "-")
	waitKubectl(t, kb, "widgets served by the back server", "widgets", "api-resources", "--api-group=stable.example.com")

	// The back server's serving certificate names 127.0.0.1 and localhost, not the
	// Service: the APIService skips verification, as Kubernetes allows.
	kf.must(t, registration("back", backPort, "stable.example.com", "v1", ""), "apply", "-f", "-")
	waitKubectl(t, kf, "the APIService Available", "True",
		"get", "apiservice", "v1.stable.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
	waitKubectl(t, kf, "widgets in the front server's discovery", "widgets", "api-resources", "--api-group=stable.example.com")
	kf.must(t, "apiVersion: stable.example.com/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: default\nspec:\n  size: 3\n", "create", "-f", "-")
	contains(t, kb.must(t, "", "get", "widget", "w1", "-o", "jsonpath={.spec.size}"), "3")
	contains(t, kf.must(t, "", "get", "widgets", "-o", "name"), "widget.stable.example.com/w1")

	// The back server authorizes the forwarded user itself: alice, allowed by the
	// front server, is refused by the back one until it grants her too.
	for _, k := range []*kubectl{kf, kb} {
		k.must(t, "", "create", "clusterrole", "widget-reader", "--verb=list", "--resource=widgets.stable.example.com")
	}
	kf.must(t, "", "create", "clusterrolebinding", "alice-widgets", "--clusterrole=widget-reader", "--user=alice")
	// Once the front allows her, a refusal can only be the back server's.
	waitKubectl(t, kf, "the front server allowing alice", "yes", "auth", "can-i", "list", "widgets.stable.example.com", "--as", "alice")
	out, err := kf.run(t, "", "--as", "alice", "get", "widgets")
	if err == nil || !strings.Contains(out, `User "alice" cannot list resource "widgets"`) {
		t.Errorf("alice through the front server, without a grant on the back one: %v\n%s", err, out)
	}
	kb.must(t, "", "create", "clusterrolebinding", "alice-widgets", "--clusterrole=widget-reader", "--user=alice")
	waitKubectl(t, kf, "alice's widgets through the front server", "w1", "--as", "alice", "get", "widgets")

	// Straight to the back server with forged headers and no credentials: refused
	// (401), the headers trusted only under the front proxy's certificate.
	backCA := loadKubeconfig(t, filepath.Join(back, "admin.kubeconfig")).ca
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(backCA)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet,
		fmt.Sprintf("https://127.0.0.1:%d/apis/stable.example.com/v1/namespaces/default/widgets", backPort), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Remote-User", "concord-admin")
	req.Header.Set("X-Remote-Group", "system:masters")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("forged front-proxy headers without its certificate: %s, want 401", resp.Status)
	}
}

// widgetsCRD is a custom resource the back server serves.
const widgetsCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.stable.example.com
spec:
  group: stable.example.com
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`

// sampleIdentity is the sample-apiserver's service account and its grants.
const sampleIdentity = `apiVersion: v1
kind: Namespace
metadata:
  name: wardle
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: apiserver
  namespace: wardle
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: wardle-auth-reader
  namespace: kube-system
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{kind: ServiceAccount, name: apiserver, namespace: wardle}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: wardle-auth-delegator
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: system:auth-delegator}
subjects: [{kind: ServiceAccount, name: apiserver, namespace: wardle}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: wardle-informers
rules:
- {apiGroups: [""], resources: [namespaces], verbs: [get, list, watch]}
- {apiGroups: [flowcontrol.apiserver.k8s.io], resources: [flowschemas, prioritylevelconfigurations], verbs: [list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: wardle-informers
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: wardle-informers}
subjects: [{kind: ServiceAccount, name: apiserver, namespace: wardle}]
`

// writeTokenKubeconfig writes a kubeconfig for the server of cfg with a bearer token.
func writeTokenKubeconfig(t *testing.T, path string, cfg *clientcmdConfig, token string) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.server, CertificateAuthorityData: cfg.ca}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}

// The migrator manages an aggregated API only once its servers publish StorageVersions
// (KEP-2339), and then migrates it through the aggregator: the sample-apiserver's
// discovery gives a storageVersionHash, yet the trigger neither creates a StorageState
// for flunders nor migrates them until their entry is published (here by the
// storageversion/publisher library, under the identity its APIService names). A state
// a user created for flunders meanwhile says why: its Tracked condition is False with
// reason AggregatedWithoutStorageVersions. Once published, that state is tracked, and
// a migration of flunders runs, listing and writing them through Concord's proxy, and
// succeeds.
func TestAggregatedAPIMigration(t *testing.T) {
	t.Parallel()
	setup := startSampleBehindConcord(t, "--disable-storage-migration")
	k := setup.k
	for i := range 3 {
		k.must(t, strings.Replace(flunder, "my-flunder", fmt.Sprint("f-", i), 1), "create", "-f", "-")
	}
	contains(t, k.must(t, "", "get", "--raw", "/apis/wardle.example.com/v1alpha1"), `"storageVersionHash"`)
	cm := process(t, setup.bin, "controller-manager", "--kubeconfig", setup.kubeconfig, "--poll-interval", "1s", "--leader-elect=false")
	kubectlUntil(t, k, cm, "the ConfigMaps' storage state", func(out string) bool { return strings.Contains(out, "configmaps") },
		"get", "storagestates", "-o", "name")
	if out := k.must(t, "", "get", "storagestates", "-o", "name"); strings.Contains(out, "flunders") {
		t.Fatalf("a storage state for an aggregated API whose servers publish no StorageVersion:\n%s", out)
	}
	k.must(t, flunderState, "create", "-f", "-")
	kubectlUntil(t, k, cm, "the user's flunders state to say why it is not tracked", func(out string) bool {
		return strings.TrimSpace(out) == "False/AggregatedWithoutStorageVersions"
	}, "get", "storagestate", "flunders.wardle.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Tracked")].status}/{.status.conditions[?(@.type=="Tracked")].reason}`)
	if out := k.must(t, "", "get", "storageversionmigrations", "-o", "jsonpath={.items[*].spec.resource.resource}"); strings.Contains(out, "flunders") {
		t.Fatalf("a migration of an aggregated API whose servers publish no StorageVersion: %s", out)
	}

	k.must(t, "", "annotate", "apiservice", "v1alpha1.wardle.example.com", "storageversion.concord.io/publishers=system:serviceaccount:wardle:apiserver")
	k.must(t, publisherGrants, "apply", "-f", "-")
	token := strings.TrimSpace(k.must(t, "", "create", "token", "apiserver", "-n", "wardle", "--duration=1h"))
	cfg := loadKubeconfig(t, setup.kubeconfig)
	p, err := publisher.New(publisher.Config{
		Client:   kubernetes.NewForConfigOrDie(&rest.Config{Host: cfg.server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.ca}}),
		ServerID: "sample-apiserver-1", Kind: "sample-apiserver",
		Resources: []publisher.Resource{{GroupResource: schema.GroupResource{Group: "wardle.example.com", Resource: "flunders"},
			EncodingVersion: "wardle.example.com/v1alpha1", DecodableVersions: []string{"wardle.example.com/v1alpha1", "wardle.example.com/v1beta1"},
			ServedVersions: []string{"wardle.example.com/v1alpha1", "wardle.example.com/v1beta1"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	waitKubectl(t, k, "a succeeded migration of flunders", "True", "get", "storageversionmigrations", "-o",
		`jsonpath={range .items[?(@.spec.resource.resource=="flunders")]}{.status.conditions[?(@.type=="Succeeded")].status}{end}`)
	waitKubectl(t, k, "the flunders' storage state tracked", "True", "get", "storagestate", "flunders.wardle.example.com", "-o",
		`jsonpath={.status.conditions[?(@.type=="Tracked")].status}`)
}

// flunderState is a StorageState of flunders made by a user, not the trigger.
const flunderState = `apiVersion: migration.k8s.io/v1alpha1
kind: StorageState
metadata: {name: flunders.wardle.example.com}
spec:
  resource: {group: wardle.example.com, resource: flunders}
`

// publisherGrants let the sample-apiserver's identity publish its StorageVersions.
const publisherGrants = `apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: wardle-identity, namespace: kube-system}
rules:
- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, create, update, delete]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: wardle-identity, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: wardle-identity}
subjects: [{kind: ServiceAccount, name: apiserver, namespace: wardle}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: wardle-storageversions}
rules:
- {apiGroups: [internal.apiserver.k8s.io], resources: [storageversions, storageversions/status], verbs: [get, create, update]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: wardle-storageversions}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: wardle-storageversions}
subjects: [{kind: ServiceAccount, name: apiserver, namespace: wardle}]
`

// startFront starts a concord binary to front others (in dir/front), and returns
// kubectl for it, its admin kubeconfig, and a file holding the request-header CA it
// publishes, which servers behind it trust (--requestheader-client-ca-file).
func startFront(t *testing.T, bin, dir string) (kf *kubectl, kubeconfig, caFile string) {
	t.Helper()
	front := filepath.Join(dir, "front")
	logs := process(t, bin, "server", "--data-dir", front, "--secure-port", fmt.Sprint(ports.Free(t)))
	kubeconfig = filepath.Join(front, "admin.kubeconfig")
	waitForFile(t, kubeconfig, logs)
	kf = newKubectl(t, kubeconfig)
	caFile = filepath.Join(dir, "front-proxy-ca.crt")
	ca := kf.must(t, "", "get", "configmap", "-n", "kube-system", "extension-apiserver-authentication", "-o", "jsonpath={.data.requestheader-client-ca-file}")
	if err := os.WriteFile(caFile, []byte(ca), 0o600); err != nil {
		t.Fatal(err)
	}
	return kf, kubeconfig, caFile
}
