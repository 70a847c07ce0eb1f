package kubepeer_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd"
	"github.com/concordproject/concord/test/kubepeer"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

const release = "1.37.2"

var (
	apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	flunders    = schema.GroupVersionResource{Group: "wardle.example.com", Version: "v1alpha1", Resource: "flunders"}
)

// sampleUser is the identity the sample-apiserver uses on the host, with the RBAC its
// deployment in sample-apiserver's artifacts/example gives it.
const sampleUser = "system:serviceaccount:wardle:apiserver"

var sampleAccount = rbacv1.Subject{Kind: "ServiceAccount", Namespace: "wardle", Name: "apiserver"}

// TestSampleBehindKubeAPIServer runs sample-apiserver behind the aggregator of a
// kube-apiserver peer, reached through an EndpointSlice on a non-loopback address of
// this machine, and logs what it asks of its host.
func TestSampleBehindKubeAPIServer(t *testing.T) {
	if os.Getenv("CONCORD_KUBEPEER") != "1" {
		t.Skip("CONCORD_KUBEPEER=1 runs it (after test/kubepeer/build.sh kube-apiserver|sample-apiserver " + release + ")")
	}
	ip, err := kubepeer.HostIP()
	if err != nil {
		t.Skipf("the peer's aggregator cannot reach the sample-apiserver: %v", err)
	}
	bin := binary(t, "sample-apiserver")
	dir := t.TempDir()
	peer := startPeer(t, dir)
	cfg, err := clientcmd.BuildConfigFromFlags("", peer.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	kubeconfig := sampleIdentity(t, cs, peer.URL, dir)

	began := time.Now()
	s, err := kubepeer.StartSample(t.Context(), kubepeer.SampleOptions{
		Binary: bin, Dir: filepath.Join(dir, "sample"), EtcdServers: startEtcd(t, dir, "sample-etcd"),
		Kubeconfig: kubeconfig, BindAddress: ip, Hosts: []string{"api.wardle.svc"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	t.Cleanup(func() { dumpOnFailure(t, s.Log) })
	t.Logf("sample-apiserver ready in %v on %s", time.Since(began).Round(time.Millisecond), s.URL)

	register(t, cs, dyn, s, ip)
	began = time.Now()
	waitAvailable(t, dyn)
	t.Logf("APIService Available after %v", time.Since(began).Round(time.Millisecond))
	checkFlunders(t, cs, dyn, peer.Kubeconfig)
	checkDelegation(t, cs, cfg, s)
	logHostRequests(t, filepath.Join(dir, "audit.log"))
}

func binary(t *testing.T, part string) string {
	t.Helper()
	bin, err := kubepeer.Binary(part, release)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func startEtcd(t *testing.T, dir, name string) []string {
	t.Helper()
	m, err := etcd.StartLoopback(t.Context(), filepath.Join(dir, name), etcd.WithUnsafeNoFsync(), etcd.WithLogLevel("error"))
	if err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(m.Close)
	return m.Endpoints()
}

// startPeer runs a kube-apiserver with Aggregation, auditing the sample-apiserver's
// requests at Metadata level into dir/audit.log.
func startPeer(t *testing.T, dir string) *kubepeer.Peer {
	t.Helper()
	policy := filepath.Join(dir, "audit-policy.yaml")
	rules := fmt.Sprintf(`{"apiVersion":"audit.k8s.io/v1","kind":"Policy","omitStages":["RequestReceived"],`+
		`"rules":[{"level":"Metadata","users":[%q]},{"level":"None"}]}`, sampleUser)
	if err := os.WriteFile(policy, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "kube-apiserver.log")
	logs, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logs.Close(); dumpOnFailure(t, logPath) })
	p, err := kubepeer.Start(t.Context(), kubepeer.Options{
		Binary: binary(t, "kube-apiserver"), Dir: filepath.Join(dir, "peer"), EtcdServers: startEtcd(t, dir, "peer-etcd"),
		Aggregation: true, Log: logs,
		Args: []string{"--audit-policy-file=" + policy, "--audit-log-path=" + filepath.Join(dir, "audit.log")},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// sampleIdentity makes the service account wardle/apiserver with the RBAC of
// sample-apiserver's example deployment (less admissionregistration, whose plugins
// StartSample turns off) and returns a kubeconfig with a token of it.
func sampleIdentity(t *testing.T, cs kubernetes.Interface, host, dir string) string {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "wardle:host"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"flowcontrol.apiserver.k8s.io"}, Resources: []string{"prioritylevelconfigurations", "flowschemas"}, Verbs: []string{"list", "watch"}},
	}}
	reader := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "wardle-auth-reader"},
		Subjects: []rbacv1.Subject{sampleAccount},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"}}
	errs := []error{
		ignore(cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "wardle"}}, metav1.CreateOptions{})),
		ignore(cs.CoreV1().ServiceAccounts("wardle").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "apiserver"}}, metav1.CreateOptions{})),
		ignore(cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})),
		ignore(cs.RbacV1().ClusterRoleBindings().Create(ctx, clusterBinding("wardle:host", "wardle:host", sampleAccount), metav1.CreateOptions{})),
		ignore(cs.RbacV1().ClusterRoleBindings().Create(ctx, clusterBinding("wardle:system:auth-delegator", "system:auth-delegator", sampleAccount), metav1.CreateOptions{})),
		ignore(cs.RbacV1().RoleBindings("kube-system").Create(ctx, reader, metav1.CreateOptions{})),
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("wardle").CreateToken(ctx, "apiserver",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sample.kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["host"] = &clientcmdapi.Cluster{Server: host, InsecureSkipTLSVerify: true}
	kc.AuthInfos["apiserver"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: "apiserver"}
	kc.CurrentContext = "host"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func clusterBinding(name, role string, subject rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: []rbacv1.Subject{subject},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
}

// ignore drops a created object, keeping the error.
func ignore[T any](_ T, err error) error { return err }

// register makes Service wardle/api, an EndpointSlice that names the sample-apiserver
// (no controller manager makes one) and APIService v1alpha1.wardle.example.com.
func register(t *testing.T, cs kubernetes.Interface, dyn dynamic.Interface, s *kubepeer.Sample, ip string) {
	t.Helper()
	ctx := t.Context()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "wardle"}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(s.Port))}},
	}}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "api-sample", Namespace: "wardle",
			Labels: map[string]string{discoveryv1.LabelServiceName: "api"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(s.Port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1alpha1.wardle.example.com"},
		"spec": map[string]any{
			"group": "wardle.example.com", "version": "v1alpha1",
			"service":  map[string]any{"namespace": "wardle", "name": "api", "port": int64(443)},
			"caBundle": base64.StdEncoding.EncodeToString(s.CA), "groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
		},
	}}
	errs := []error{
		ignore(cs.CoreV1().Services("wardle").Create(ctx, svc, metav1.CreateOptions{})),
		ignore(cs.DiscoveryV1().EndpointSlices("wardle").Create(ctx, slice, metav1.CreateOptions{})),
		ignore(dyn.Resource(apiServices).Create(ctx, apiService, metav1.CreateOptions{})),
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// waitAvailable waits a minute at most for the APIService's Available condition.
func waitAvailable(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		u, err := dyn.Resource(apiServices).Get(t.Context(), "v1alpha1.wardle.example.com", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			c, _ := c.(map[string]any)
			if c["type"] == "Available" {
				if c["status"] == "True" {
					return
				}
				last = fmt.Sprintf("%v %v: %v", c["status"], c["reason"], c["message"])
			}
		}
	}
	t.Fatalf("APIService v1alpha1.wardle.example.com not Available: %s", last)
}

// checkFlunders creates a flunder through the peer and lists flunders in all
// namespaces, by client and, if it is installed, by kubectl.
func checkFlunders(t *testing.T, cs kubernetes.Interface, dyn dynamic.Interface, kubeconfig string) {
	t.Helper()
	ctx := t.Context()
	res, err := cs.Discovery().ServerResourcesForGroupVersion("wardle.example.com/v1alpha1")
	if err != nil {
		t.Fatalf("discovery of wardle.example.com/v1alpha1 through the peer: %v", err)
	}
	var names []string
	for _, r := range res.APIResources {
		names = append(names, r.Name)
	}
	if !slices.Contains(names, "flunders") || !slices.Contains(names, "fischers") {
		t.Errorf("wardle.example.com/v1alpha1 resources = %v, want flunders and fischers among them", names)
	}
	f := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
		"metadata": map[string]any{"name": "my-first-flunder", "namespace": "wardle"},
	}}
	if _, err := dyn.Resource(flunders).Namespace("wardle").Create(ctx, f, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a flunder through the peer: %v", err)
	}
	list, err := dyn.Resource(flunders).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].GetName() != "my-first-flunder" {
		t.Fatalf("listing flunders through the peer: %v, %v", list, err)
	}
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Log("kubectl is not installed: not running kubectl get flunders -A")
		return
	}
	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig="+kubeconfig, "--cache-dir="+t.TempDir(), "get", "flunders", "-A").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "my-first-flunder") {
		t.Fatalf("kubectl get flunders -A: %v\n%s", err, out)
	}
	t.Logf("kubectl get flunders -A:\n%s", out)
}

// checkDelegation checks the sample-apiserver's delegated authorization (a user
// impersonated through the peer, whom the sample asks the host about with a
// SubjectAccessReview) and delegated authentication (the peer's admin token sent to
// the sample directly, which it asks the host about with a TokenReview).
func checkDelegation(t *testing.T, cs kubernetes.Interface, cfg *rest.Config, s *kubepeer.Sample) {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "flunder-reader"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"wardle.example.com"}, Resources: []string{"flunders"}, Verbs: []string{"get", "list"}},
	}}
	binding := clusterBinding("flunder-reader", "flunder-reader", rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"})
	if err := errors.Join(ignore(cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})),
		ignore(cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}))); err != nil {
		t.Fatal(err)
	}
	alice := rest.CopyConfig(cfg)
	alice.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"system:authenticated"}}
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if _, err = dynamic.NewForConfigOrDie(alice).Resource(flunders).List(ctx, metav1.ListOptions{}); err == nil {
			break
		}
	}
	if err != nil {
		t.Errorf("alice listing flunders through the peer: %v", err)
	}

	direct := &rest.Config{Host: s.URL, BearerToken: cfg.BearerToken, TLSClientConfig: rest.TLSClientConfig{CAData: s.CA}}
	if _, err := dynamic.NewForConfigOrDie(direct).Resource(flunders).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing flunders at the sample-apiserver with the peer's admin token: %v", err)
	}
}

// logHostRequests logs, from the peer's audit log, every request the sample-apiserver
// made of its host, with the status codes it got and how often; none may have failed.
func logHostRequests(t *testing.T, auditLog string) {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	seen := map[string]map[int]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Stage, Verb, RequestURI string
			ResponseStatus          struct{ Code int }
		}
		// A watch is logged when it starts; it completes when the sample stops.
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || (ev.Stage == "ResponseStarted") != (ev.Verb == "watch") {
			continue
		}
		key := ev.Verb + " " + normalize(ev.RequestURI)
		if seen[key] == nil {
			seen[key] = map[int]int{}
		}
		seen[key][ev.ResponseStatus.Code]++
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s  %v\n", k, seen[k])
		for code := range seen[k] {
			if code >= 400 {
				t.Errorf("the host answered %s with %d", k, code)
			}
		}
	}
	t.Logf("requests of %s to the host (status code: count):\n%s", sampleUser, b.String())
}

// normalize drops the query parameters of a request URI that vary between calls.
func normalize(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return uri
	}
	q := u.Query()
	for _, p := range []string{"resourceVersion", "timeout", "timeoutSeconds", "limit"} {
		q.Del(p)
	}
	u.RawQuery = q.Encode()
	s, _ := url.QueryUnescape(u.String())
	return s
}

func dumpOnFailure(t *testing.T, path string) {
	if !t.Failed() {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Log(err)
		return
	}
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	t.Logf("the end of %s:\n%s", path, b)
}
