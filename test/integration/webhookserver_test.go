package integration

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
)

// hookFunc answers one admission request of a test webhook.
type hookFunc func(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// webhookServer is an admission webhook served by the test process over TLS, its
// certificate (for 127.0.0.1 and the service name hooks.webhooks.svc) signed by a CA
// the webhook configurations carry in their caBundle. Each path answers with its
// hookFunc; "/hang" answers nothing until the caller gives up.
type webhookServer struct {
	srv  *httptest.Server
	ca   []byte
	port int

	stop chan struct{} // closed when the test ends: hanging requests give up

	mu    sync.Mutex
	hooks map[string]hookFunc
	seen  map[string][]seenReview
}

// seenReview is one review a path received.
type seenReview struct {
	apiVersion string
	request    *admissionv1.AdmissionRequest
}

func startWebhookServer(t *testing.T) *webhookServer {
	t.Helper()
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("hooks.webhooks.svc", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &webhookServer{ca: certPEM, hooks: map[string]hookFunc{}, seen: map[string][]seenReview{}, stop: make(chan struct{})}
	w.srv = httptest.NewUnstartedServer(http.HandlerFunc(w.serve))
	w.srv.TLS = tlsConfig(t, certPEM, keyPEM)
	w.srv.StartTLS()
	t.Cleanup(func() {
		close(w.stop)
		w.srv.Close()
	})
	_, port, _ := net.SplitHostPort(w.srv.Listener.Addr().String())
	w.port, _ = strconv.Atoi(port)
	return w
}

// handle makes path answer with f.
func (w *webhookServer) handle(path string, f hookFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hooks[path] = f
}

// reviews returns what path received so far.
func (w *webhookServer) reviews(path string) []seenReview {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]seenReview(nil), w.seen[path]...)
}

func (w *webhookServer) serve(rw http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/hang" {
		select {
		case <-r.Context().Done():
		case <-w.stop:
		}
		return
	}
	var review admissionv1.AdmissionReview // v1beta1 has the same fields
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(rw, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	f := w.hooks[r.URL.Path]
	w.seen[r.URL.Path] = append(w.seen[r.URL.Path], seenReview{apiVersion: review.APIVersion, request: review.Request})
	w.mu.Unlock()
	if f == nil {
		http.NotFound(rw, r)
		return
	}
	resp := f(review.Request)
	resp.UID = review.Request.UID
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(&admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp})
}

// url is the URL of path on the server.
func (w *webhookServer) url(path string) *string {
	return ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", w.port, path))
}

// clientConfig calls path by URL, trusting the server's CA.
func (w *webhookServer) clientConfig(path string) admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{URL: w.url(path), CABundle: w.ca}
}

// register publishes the server as Service webhooks/hooks, port 443, through an
// EndpointSlice naming 127.0.0.1 and its port.
func (w *webhookServer) register(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	ctx := t.Context()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "webhooks"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hooks", Namespace: "webhooks"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(int32(w.port))}}}}
	if _, err := cs.CoreV1().Services("webhooks").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "hooks", Namespace: "webhooks", Labels: map[string]string{discoveryv1.LabelServiceName: "hooks"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(""), Port: ptr.To(int32(w.port))}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices("webhooks").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// allow admits; deny refuses with code and message.
func allow(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}

func deny(code int32, message string) hookFunc {
	return func(*admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: code, Message: message}}
	}
}

// jsonPatch admits with patch, a JSON patch.
func jsonPatch(patch string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: []byte(patch), PatchType: ptr.To(admissionv1.PatchTypeJSONPatch)}
}

// hookIn is a webhook named name calling path for CREATE and UPDATE (or ops) of
// resources (core v1 unless group/version say otherwise, "g/v/r") in the namespaces
// labelled webhook-test=scenario.
func hookIn(w *webhookServer, name, path, scenario string, ops []admissionregistrationv1.OperationType, resources ...string) admissionregistrationv1.ValidatingWebhook {
	if ops == nil {
		ops = []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	}
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    name,
		ClientConfig:            w.clientConfig(path),
		Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: ops, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: resources}}},
		NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"webhook-test": scenario}},
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
		TimeoutSeconds:          ptr.To[int32](5),
	}
}

// mutatingHookIn is hookIn's mutating webhook.
func mutatingHookIn(w *webhookServer, name, path, scenario string, resources ...string) admissionregistrationv1.MutatingWebhook {
	v := hookIn(w, name, path, scenario, nil, resources...)
	return admissionregistrationv1.MutatingWebhook{
		Name: v.Name, ClientConfig: v.ClientConfig, Rules: v.Rules, NamespaceSelector: v.NamespaceSelector,
		SideEffects: v.SideEffects, AdmissionReviewVersions: v.AdmissionReviewVersions, TimeoutSeconds: v.TimeoutSeconds,
	}
}

// webhookNamespace creates namespace name labelled webhook-test=scenario (and labels).
func webhookNamespace(t *testing.T, cs kubernetes.Interface, name, scenario string, labels map[string]string) {
	t.Helper()
	l := map[string]string{"webhook-test": scenario}
	for k, v := range labels {
		l[k] = v
	}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// tlsConfig serves the certificate of certPEM and keyPEM.
func tlsConfig(t *testing.T, certPEM, keyPEM []byte) *tls.Config {
	t.Helper()
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}
