package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/harness"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"
)

// wardleGV is the group-version the test backend serves.
const wardleGV = "wardle.example.com/v1alpha1"

// backend is an aggregated API server written for the test: it trusts only the
// front-proxy CA the servers publish, serves discovery of flunders, and answers a list
// of flunders with the user the front-proxy headers name.
type backend struct {
	srv  *httptest.Server
	ca   []byte
	port int

	mu   sync.Mutex
	seen []http.Header // the headers of the flunder requests
}

func startBackend(t *testing.T, frontProxyCA []byte) *backend {
	t.Helper()
	// The serving certificate, and the CA that signed it, in one bundle.
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("api.wardle.svc", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(frontProxyCA) {
		t.Fatal("the published requestheader-client-ca-file holds no certificate")
	}
	b := &backend{ca: certPEM}
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(b.serve))
	b.srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	b.srv.StartTLS()
	t.Cleanup(b.srv.Close)
	_, port, _ := net.SplitHostPort(b.srv.Listener.Addr().String())
	b.port, _ = strconv.Atoi(port)
	return b
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	if cn := r.TLS.PeerCertificates[0].Subject.CommonName; cn != "front-proxy-client" {
		http.Error(w, "not the front proxy: "+cn, http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/apis/" + wardleGV:
		_ = json.NewEncoder(w).Encode(&metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: wardleGV,
			APIResources: []metav1.APIResource{
				{Name: "flunders", SingularName: "flunder", Namespaced: true, Kind: "Flunder", Verbs: metav1.Verbs{"get", "list"}},
				{Name: "flunders/status", Namespaced: true, Kind: "Flunder", Verbs: metav1.Verbs{"get"}},
			},
		})
	case "/apis/" + wardleGV + "/namespaces/default/flunders":
		b.mu.Lock()
		b.seen = append(b.seen, r.Header.Clone())
		b.mu.Unlock()
		fmt.Fprintf(w, `{"apiVersion":%q,"kind":"FlunderList","metadata":{},"items":[{"apiVersion":%q,"kind":"Flunder","metadata":{"name":%q,"namespace":"default"}}]}`,
			wardleGV, wardleGV, r.Header.Get("X-Remote-User"))
	default:
		http.NotFound(w, r)
	}
}

// calls is the number of flunder requests the backend has had.
func (b *backend) calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.seen)
}

func (b *backend) lastSeen() http.Header {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.seen) == 0 {
		return nil
	}
	return b.seen[len(b.seen)-1]
}

// Concord proxies a registered group-version to its backend, found through a Service
// and its EndpointSlices: the user goes in the front-proxy headers under the
// published front-proxy CA, its credentials and impersonation headers do not; the
// APIService's Available condition follows the backend; discovery merges its group
// on every server; and a backend that is gone is a prompt 503 naming the APIService.
func TestAggregatedAPIServer(t *testing.T) {
	t.Parallel()
	c := harness.Start(t, 2, withTokens(t, rbacTokens))
	ctx := t.Context()
	admin := c.Servers[0].Clientset(t)
	cm, err := admin.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"client-ca-file", "requestheader-client-ca-file", "requestheader-allowed-names", "requestheader-username-headers", "requestheader-group-headers", "requestheader-extra-headers-prefix"} {
		if cm.Data[k] == "" {
			t.Errorf("extension-apiserver-authentication lacks %s", k)
		}
	}
	b := startBackend(t, []byte(cm.Data["requestheader-client-ca-file"]))
	registerBackend(t, c.Servers[0].Config(), b)
	apis := aggregatorclient.NewForConfigOrDie(c.Servers[0].Config()).ApiregistrationV1().APIServices()
	waitAvailable(t, apis, "v1alpha1.wardle.example.com", apiregistrationv1.ConditionTrue, "Passed")

	// Through each server: the user in the headers, the token gone.
	for _, s := range c.Servers {
		checkProxied(t, s.Config(), b, "concord-admin", "system:masters")
	}
	grantFlunders(t, admin, "alice")
	impersonating := rest.CopyConfig(c.Servers[1].Config())
	impersonating.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"dev"}, Extra: map[string][]string{"scopes.example/x": {"a", "b"}}}
	h := checkProxied(t, impersonating, b, "alice", "dev")
	if got := h.Values("X-Remote-Extra-Scopes.example%2fx"); strings.Join(got, ",") != "a,b" {
		t.Errorf("extra headers %v, want X-Remote-Extra-Scopes.example%%2fx: a, b", h)
	}
	for k := range h {
		if strings.HasPrefix(k, "Impersonate-") {
			t.Errorf("the backend got %s", k)
		}
	}
	// bob may not list flunders: Concord refuses before the backend hears of it.
	before := b.calls()
	err = kubernetes.NewForConfigOrDie(withToken(c.Servers[0].Config(), "bob-token")).CoreV1().RESTClient().Get().
		AbsPath("/apis/" + wardleGV + "/namespaces/default/flunders").Do(ctx).Error()
	if after := b.calls(); !apierrors.IsForbidden(err) || after != before {
		t.Errorf("bob listing flunders: %v (backend calls %d → %d), want 403 and no call", err, before, after)
	}

	checkAggregatedDiscovery(t, c)

	// A Service of type ExternalName leads to its name, on the APIService's port.
	ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "wardle"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost", Ports: []corev1.ServicePort{{Port: int32(b.port)}}}}
	if _, err := admin.CoreV1().Services("wardle").Create(ctx, ext, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// (The availability controller writes the APIService's status meanwhile.)
	if _, err := updateRetrying(ctx, apis.Get, apis.Update, "v1alpha1.wardle.example.com", func(svc *apiregistrationv1.APIService) {
		svc.Spec.Service = &apiregistrationv1.ServiceReference{Namespace: "wardle", Name: "ext", Port: ptr.To(int32(b.port))}
		svc.Spec.CABundle, svc.Spec.InsecureSkipTLSVerify = nil, true // its certificate names api.wardle.svc
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "flunders through the ExternalName Service", func() (bool, error) {
		before := b.calls()
		err := admin.CoreV1().RESTClient().Get().AbsPath("/apis/" + wardleGV + "/namespaces/default/flunders").Do(ctx).Error()
		return err == nil && b.calls() > before, nil
	})

	// The backend goes: requests fail at once with a 503 (the backend cannot be
	// reached), and so they do once the condition says so (it is unavailable).
	b.srv.Close()
	check503 := func(when string) {
		t.Helper()
		start := time.Now()
		err := admin.CoreV1().RESTClient().Get().AbsPath("/apis/" + wardleGV + "/namespaces/default/flunders").Do(ctx).Error()
		var status apierrors.APIStatus
		if !apierrors.IsServiceUnavailable(err) || !errorsAs(err, &status) || !strings.Contains(status.Status().Message, `"v1alpha1.wardle.example.com"`) {
			t.Errorf("listing flunders of a gone backend (%s): %v, want a 503 naming the APIService", when, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the 503 took %v (%s)", d, when)
		}
	}
	check503("the backend just closed")
	waitAvailable(t, apis, "v1alpha1.wardle.example.com", apiregistrationv1.ConditionFalse, "FailedDiscoveryCheck")
	check503("unavailable")
	// Discovery keeps the group, marked stale.
	waitFor(t, "the wardle group's discovery stale", func() (bool, error) {
		body, err := admin.CoreV1().RESTClient().Get().AbsPath("/apis").
			SetHeader("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").DoRaw(ctx)
		if err != nil {
			return false, err
		}
		var list apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(body, &list); err != nil {
			return false, err
		}
		for _, g := range list.Items {
			if g.Name == "wardle.example.com" {
				return len(g.Versions) == 1 && g.Versions[0].Freshness == apidiscoveryv2.DiscoveryFreshnessStale, nil
			}
		}
		return false, nil
	})
	// Back on the Service api, whose endpoints go: the reason says which.
	if _, err := updateRetrying(ctx, apis.Get, apis.Update, "v1alpha1.wardle.example.com", func(svc *apiregistrationv1.APIService) {
		svc.Spec.Service = &apiregistrationv1.ServiceReference{Namespace: "wardle", Name: "api"}
	}); err != nil {
		t.Fatal(err)
	}
	if err := admin.DiscoveryV1().EndpointSlices("wardle").Delete(ctx, "api", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, apis, "v1alpha1.wardle.example.com", apiregistrationv1.ConditionFalse, "EndpointsNotFound")
}

// registerBackend creates the Service, EndpointSlice and APIService of b.
func registerBackend(t *testing.T, cfg *rest.Config, b *backend) {
	t.Helper()
	ctx := t.Context()
	client := kubernetes.NewForConfigOrDie(cfg)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "wardle"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "wardle"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(int32(b.port))}}}}
	if _, err := client.CoreV1().Services("wardle").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "api", Namespace: "wardle", Labels: map[string]string{discoveryv1.LabelServiceName: "api"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(""), Port: ptr.To(int32(b.port))}},
	}
	if _, err := client.DiscoveryV1().EndpointSlices("wardle").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	apiService := &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.wardle.example.com"},
		Spec: apiregistrationv1.APIServiceSpec{
			Service: &apiregistrationv1.ServiceReference{Namespace: "wardle", Name: "api"},
			Group:   "wardle.example.com", Version: "v1alpha1", CABundle: b.ca,
			GroupPriorityMinimum: 2000, VersionPriority: 200,
		},
	}
	apis := aggregatorclient.NewForConfigOrDie(cfg).ApiregistrationV1().APIServices()
	if _, err := apis.Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitAvailable waits until APIService name's Available condition has status and
// reason.
func waitAvailable(t *testing.T, apis interface {
	Get(context.Context, string, metav1.GetOptions) (*apiregistrationv1.APIService, error)
}, name string, status apiregistrationv1.ConditionStatus, reason string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("APIService %s Available=%s (%s)", name, status, reason), func() (bool, error) {
		s, err := apis.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range s.Status.Conditions {
			if c.Type == apiregistrationv1.Available {
				return c.Status == status && c.Reason == reason, nil
			}
		}
		return false, nil
	})
}

// checkProxied lists flunders through cfg and checks that the backend answered for
// user, in group, without the caller's credentials; it returns the headers the
// backend got. The server behind cfg learns of the APIService, its endpoints and the
// user's grants through its informers, so a 404, 403 or 503 is waited out.
func checkProxied(t *testing.T, cfg *rest.Config, b *backend, user, group string) http.Header {
	t.Helper()
	var body []byte
	waitFor(t, "flunders listed as "+user, func() (bool, error) {
		var err error
		body, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().RESTClient().Get().
			AbsPath("/apis/" + wardleGV + "/namespaces/default/flunders").DoRaw(t.Context())
		if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsServiceUnavailable(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("%w: %s", err, body)
		}
		return true, nil
	})
	var list struct {
		Items []metav1.PartialObjectMetadata `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Items) != 1 || list.Items[0].Name != user {
		t.Fatalf("flunders as %s: %s (%v), want one named after the user", user, body, err)
	}
	h := b.lastSeen()
	if h.Get("Authorization") != "" {
		t.Errorf("the backend got the caller's Authorization header")
	}
	if groups := h.Values("X-Remote-Group"); !slices.Contains(groups, group) || !slices.Contains(groups, "system:authenticated") {
		t.Errorf("X-Remote-Group %v, want %s and system:authenticated", groups, group)
	}
	return h
}

// checkAggregatedDiscovery checks that every server lists the wardle group, legacy
// and aggregated, with its resources.
func checkAggregatedDiscovery(t *testing.T, c *harness.Cluster) {
	t.Helper()
	for i, s := range c.Servers {
		waitFor(t, fmt.Sprintf("server %d's discovery of %s", i, wardleGV), func() (bool, error) {
			groups, err := kubernetes.NewForConfigOrDie(s.Config()).Discovery().ServerGroups()
			if err != nil {
				return false, err
			}
			for _, g := range groups.Groups {
				if g.Name == "wardle.example.com" {
					return g.PreferredVersion.GroupVersion == wardleGV, nil
				}
			}
			return false, nil
		})
		resources, err := kubernetes.NewForConfigOrDie(s.Config()).Discovery().ServerResourcesForGroupVersion(wardleGV)
		if err != nil || len(resources.APIResources) != 2 {
			t.Errorf("server %d: discovery of %s: %+v %v", i, wardleGV, resources, err)
		}
		body, err := kubernetes.NewForConfigOrDie(s.Config()).CoreV1().RESTClient().Get().AbsPath("/apis").
			SetHeader("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").DoRaw(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var list apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, g := range list.Items {
			if g.Name == "wardle.example.com" && len(g.Versions) == 1 && len(g.Versions[0].Resources) == 1 &&
				g.Versions[0].Resources[0].Resource == "flunders" && len(g.Versions[0].Resources[0].Subresources) == 1 {
				found = true
			}
		}
		if !found {
			t.Errorf("server %d: aggregated discovery lacks flunders (with status): %s", i, body)
		}
	}
}

// grantFlunders lets user list flunders in the default namespace.
func grantFlunders(t *testing.T, client kubernetes.Interface, user string) {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "flunder-reader", Namespace: "default"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"wardle.example.com"}, Resources: []string{"flunders"}, Verbs: []string{"list"}}}}
	if _, err := client.RbacV1().Roles("default").Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "flunder-reader", Namespace: "default"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "flunder-reader"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	if _, err := client.RbacV1().RoleBindings("default").Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
