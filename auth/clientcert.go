package auth

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"time"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ErrNoUser means a client certificate was asked for without a user name.
var ErrNoUser = errors.New("a client certificate needs a user name")

// NewClientCertificate signs a client certificate for user, in groups, with the
// cluster CA: the servers authenticate it as that user (the subject's common name) in
// those groups (its organizations), as Kubernetes does. It is valid for validity, or
// until the CA expires.
func NewClientCertificate(ca *ClusterCredentials, user string, groups []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if user == "" {
		return nil, nil, ErrNoUser
	}
	caCert, caKey, err := ca.parseCA()
	if err != nil {
		return nil, nil, err
	}
	return signLeaf(caCert, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, time.Now(), validity)
}

// WriteClientCertKubeconfig writes a kubeconfig at path (mode 0600) for a user who
// authenticates to serverURL with a client certificate, as WriteKubeconfig does for a
// token.
func WriteClientCertKubeconfig(path, serverURL string, caPEM, certPEM, keyPEM []byte, contextName string) error {
	user := clientcmdapi.NewAuthInfo()
	user.ClientCertificateData, user.ClientKeyData = certPEM, keyPEM
	return writeKubeconfig(path, serverURL, caPEM, user, contextName)
}

// FrontProxyClientName is the common name of the client certificate servers present
// when they proxy requests to aggregated API servers: the only name the published
// request-header configuration allows (requestheader-allowed-names).
const FrontProxyClientName = "front-proxy-client"

// ErrNoFrontProxyCA means the cluster credentials have no front-proxy CA.
var ErrNoFrontProxyCA = errors.New("the cluster credentials have no front-proxy CA")

// NewFrontProxyClientCertificate signs, with the front-proxy CA, the client
// certificate a server presents to aggregated API servers, valid for validity.
func NewFrontProxyClientCertificate(creds *ClusterCredentials, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if len(creds.FrontProxyCACert) == 0 {
		return nil, nil, ErrNoFrontProxyCA
	}
	ca := &ClusterCredentials{CACert: creds.FrontProxyCACert, CAKey: creds.FrontProxyCAKey}
	caCert, caKey, err := ca.parseCA()
	if err != nil {
		return nil, nil, fmt.Errorf("front-proxy CA: %w", err)
	}
	return signLeaf(caCert, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: FrontProxyClientName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, time.Now(), validity)
}
