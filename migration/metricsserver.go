package migration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"time"

	"github.com/concordproject/concord/respond"
	"github.com/concordproject/concord/retry"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// metricsServer serves the controller manager's /metrics over HTTPS, every request
// authenticated and authorized by the API server the controller manager works for, as
// kube-controller-manager serves its own: a client certificate signed by the CA the
// API server accepts certificates of (client-ca-file of its
// extension-apiserver-authentication ConfigMap, read at start) is its common name in
// its organizations, a bearer token is reviewed (TokenReview; neither is
// system:anonymous), and the user must be allowed to get the non-resource path
// (SubjectAccessReview). Refusals are metav1.Status answers (401, 403). It is a
// lifecycle component: Run serves until its context is done, drains, and returns once
// the server has stopped.
type metricsServer struct {
	ln  net.Listener
	srv *http.Server
}

// metricsPath is the one path the server answers.
const metricsPath = "/metrics"

// reviewBackoff spaces the attempts of a token or access review that met a server
// error: kube-controller-manager's (five attempts from half a second).
var reviewBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// newMetricsServer listens on addr (so that a taken address fails the command at
// once) with the certificate and key of certFile and keyFile, or a self-signed one
// for the host when both are "".
func newMetricsServer(ctx context.Context, addr, certFile, keyFile string, cs kubernetes.Interface, reg *prometheus.Registry) (*metricsServer, error) {
	cert, err := servingCertificate(addr, certFile, keyFile)
	if err != nil {
		return nil, err
	}
	ca, err := clientCA(ctx, cs)
	if err != nil {
		return nil, err
	}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		Anonymous:                          &apiserver.AnonymousAuthConfig{Enabled: true},
		ClientCertificateCAContentProvider: ca,
		TokenAccessReviewClient:            cs.AuthenticationV1(),
		CacheTTL:                           10 * time.Second,
		WebhookRetryBackoff:                &reviewBackoff,
	}.New()
	if err != nil {
		return nil, err
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: cs.AuthorizationV1(),
		AllowCacheTTL:             10 * time.Second,
		DenyCacheTTL:              10 * time.Second,
		WebhookRetryBackoff:       &reviewBackoff,
	}.New()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-bind-address: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(metricsPath, guarded(authn, authz, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, ClientAuth: tls.RequestClientCert}}
	return &metricsServer{ln: ln, srv: srv}, nil
}

// authenticationConfigMap is the ConfigMap in kube-system where an API server
// publishes how it authenticates, for the components that delegate to it.
const authenticationConfigMap = "extension-apiserver-authentication"

// clientCA reads the CA of the client certificates the API server accepts from its
// authentication ConfigMap (nil when it publishes none: only tokens authenticate
// then), as kube-controller-manager does.
func clientCA(ctx context.Context, cs kubernetes.Interface) (dynamiccertificates.CAContentProvider, error) {
	var cm *corev1.ConfigMap
	policy := retry.Policy{Backoff: retry.StartUp.Backoff, Retriable: func(err error) bool {
		return !apierrors.IsNotFound(err) && retry.NotRefused(err)
	}}
	err := retry.Do(ctx, policy, func(ctx context.Context) error {
		var err error
		cm, err = cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, authenticationConfigMap, metav1.GetOptions{})
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		klog.FromContext(ctx).Info("The API server publishes no client CA: /metrics authenticates tokens only", "configMap", authenticationConfigMap)
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading the API server's client CA (%s/%s): %w", metav1.NamespaceSystem, authenticationConfigMap, err)
	}
	pem := cm.Data["client-ca-file"]
	if pem == "" {
		return nil, nil
	}
	return dynamiccertificates.NewStaticCAContent("client-ca", []byte(pem))
}

// servingCertificate loads certFile and keyFile, or makes a self-signed certificate
// for the host of addr.
func servingCertificate(addr, certFile, keyFile string) (tls.Certificate, error) {
	switch {
	case certFile != "" && keyFile != "":
		return tls.LoadX509KeyPair(certFile, keyFile)
	case certFile != "" || keyFile != "":
		return tls.Certificate{}, errTLSPair
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("--metrics-bind-address: %w", err)
	}
	if host == "" {
		host = "localhost"
	}
	return selfSignedCertificate(host)
}

// selfSignedCertificateValidity is how long a made-up serving certificate is valid
// from an hour before it is made, as client-go's GenerateSelfSignedCertKey makes
// kube-controller-manager's.
const selfSignedCertificateValidity = 365 * 24 * time.Hour

// selfSignedCertificate makes a self-signed serving certificate for host (an IP
// address or a DNS name) with a new ECDSA P-256 key. kube-controller-manager's comes
// from client-go's GenerateSelfSignedCertKey, which makes two RSA 2048 keys (a CA's
// and the certificate's): 190 ms of CPU at every start, against 34 µs for this key.
func selfSignedCertificate(host string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("generating the metrics server's key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("generating a serial number: %w", err)
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber:          serial.Add(serial, big.NewInt(1)),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", host, now.Unix())},
		NotBefore:             now.Add(-time.Hour).UTC(),
		NotAfter:              now.Add(-time.Hour + selfSignedCertificateValidity).UTC(),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if ip := net.ParseIP(host); ip != nil {
		template.IPAddresses = []net.IP{ip}
	} else {
		template.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("signing the metrics server's certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("parsing the metrics server's new certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// Addr returns the address the server listens on.
func (m *metricsServer) Addr() string { return m.ln.Addr().String() }

// Run serves until ctx is done, then shuts the server down (waiting up to five
// seconds for requests under way), and returns once it has stopped.
func (m *metricsServer) Run(ctx context.Context) error {
	served := make(chan error, 1)
	go func() { served <- m.srv.ServeTLS(m.ln, "", "") }()
	select {
	case err := <-served:
		return fmt.Errorf("metrics server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := m.srv.Shutdown(sctx); err != nil {
		klog.FromContext(ctx).Error(err, "Metrics server did not drain")
		_ = m.srv.Close()
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// guarded answers a request next would answer only if authn finds who sent it and
// authz allows that user to get the request's path.
func guarded(authn authenticator.Request, authz authorizer.Authorizer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := authn.AuthenticateRequest(r)
		if err != nil || !ok {
			respond.Error(w, r, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		attrs := authorizer.AttributesRecord{User: resp.User, Verb: "get", Path: r.URL.Path}
		decision, reason, err := authz.Authorize(r.Context(), attrs)
		if decision != authorizer.DecisionAllow {
			msg := fmt.Sprintf("User %q cannot get path %q", resp.User.GetName(), r.URL.Path)
			if reason != "" {
				msg += ": " + reason
			}
			if err != nil {
				msg += ": " + err.Error()
			}
			respond.Error(w, r, apierrors.NewForbidden(schema.GroupResource{}, "", errors.New(msg)))
			return
		}
		next.ServeHTTP(w, r)
	})
}
