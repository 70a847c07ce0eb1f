package aggregator

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"time"

	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// Bounds of a proxied request's connection, so that a backend that does not answer
// gives a 503, never a hang (the handler chain's timeout bounds the rest).
const (
	dialTimeout           = 5 * time.Second
	tlsHandshakeTimeout   = 5 * time.Second
	responseHeaderTimeout = 60 * time.Second
)

// transportKey is what a backend's transport depends on.
type transportKey struct {
	name       string // the APIService's
	caBundle   string
	insecure   bool
	serverName string
}

// transport returns the transport to svc's backend: the front-proxy client
// certificate, the backend verified with svc's caBundle under serverName (or not, with
// insecureSkipTLSVerify). Transports are kept per APIService and replaced when its
// TLS settings change.
func (a *Aggregator) transport(svc *apiregistrationv1.APIService, serverName string) (*http.Transport, error) {
	key := transportKey{name: svc.Name, caBundle: string(svc.Spec.CABundle), insecure: svc.Spec.InsecureSkipTLSVerify, serverName: serverName}
	a.mu.Lock()
	defer a.mu.Unlock()
	if rt, ok := a.transports[key]; ok {
		return rt, nil
	}
	tlsConfig := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		Certificates:       []tls.Certificate{a.clientCert},
		ServerName:         serverName,
		InsecureSkipVerify: svc.Spec.InsecureSkipTLSVerify, //nolint:gosec // the APIService asks for it, as in Kubernetes
	}
	if len(svc.Spec.CABundle) > 0 && !svc.Spec.InsecureSkipTLSVerify {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(svc.Spec.CABundle) {
			return nil, fmt.Errorf("apiservice %s: spec.caBundle holds no PEM certificate", svc.Name)
		}
		tlsConfig.RootCAs = pool
	}
	rt := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		ResponseHeaderTimeout: responseHeaderTimeout,
		MaxIdleConnsPerHost:   100,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	for k, old := range a.transports {
		if k.name == svc.Name {
			old.CloseIdleConnections()
			delete(a.transports, k)
		}
	}
	a.transports[key] = rt
	return rt, nil
}
