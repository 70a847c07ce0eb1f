package auth

import (
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
)

// File names EnsureServingCert writes in a certificate directory.
const (
	// ServingCertFile is the PEM serving certificate, signed by the cluster CA.
	ServingCertFile = "serving.crt"
	// ServingKeyFile is the PEM private key of ServingCertFile, written with mode 0600.
	ServingKeyFile = "serving.key"
)

const (
	servingCertValidity = 365 * 24 * time.Hour
	// servingCertRenewBefore is how long before expiry an existing serving certificate is
	// replaced rather than reused, so a server started now does not expire while running.
	servingCertRenewBefore = 30 * 24 * time.Hour
	// clockSkew backdates NotBefore so that clients whose clocks lag still accept the
	// certificate.
	clockSkew = 5 * time.Minute
)

// ErrNoHosts means EnsureServingCert was given no host to put in the certificate.
var ErrNoHosts = errors.New("serving certificate needs at least one host")

// servingCertMu serializes EnsureServingCert within the process, so servers started
// together (the test harness) never interleave the writes of a certificate and its key.
var servingCertMu sync.Mutex

// EnsureServingCert makes sure certDir holds serving.crt and serving.key, a certificate
// signed by ca's CA for every entry of hosts, and returns their paths.
//
// hosts are IP addresses (possibly in brackets, like "[::1]") or DNS names; empty entries
// and duplicates are ignored. Existing files are reused when the pair matches, chains to
// ca, covers every host and stays valid for at least 30 more days; otherwise a new ECDSA
// P-256 key and a one-year certificate are written (the key with mode 0600). Concurrent
// calls within one process are serialized; separate processes must not share certDir.
func EnsureServingCert(certDir string, ca *ClusterCredentials, hosts []string) (certFile, keyFile string, err error) {
	if certDir == "" {
		return "", "", errors.New("serving certificate: empty certificate directory")
	}
	ips, dnsNames := splitHosts(hosts)
	if len(ips) == 0 && len(dnsNames) == 0 {
		return "", "", ErrNoHosts
	}
	caCert, caKey, err := ca.parseCA()
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(certDir, ServingCertFile), filepath.Join(certDir, ServingKeyFile)

	servingCertMu.Lock()
	defer servingCertMu.Unlock()

	now := time.Now()
	reason := servingCertProblem(certFile, keyFile, caCert, ips, dnsNames, now)
	if reason == "" {
		return certFile, keyFile, nil
	}
	klog.Background().V(2).Info("Writing serving certificate", "certFile", certFile, "reason", reason)

	commonName := "concord"
	if len(dnsNames) > 0 {
		commonName = dnsNames[0]
	}
	certPEM, keyPEM, err := signLeaf(caCert, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    dnsNames,
		IPAddresses: ips,
	}, now, servingCertValidity)
	if err != nil {
		return "", "", fmt.Errorf("serving certificate: %w", err)
	}
	// Key first: a crash in between leaves a mismatched pair, which the next call detects
	// and replaces.
	if err := writeFileAtomic(keyFile, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := writeFileAtomic(certFile, certPEM, 0o644); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// servingCertProblem says why the existing pair cannot be reused, or "" if it can.
func servingCertProblem(certFile, keyFile string, ca *x509.Certificate, ips []net.IP, dnsNames []string, now time.Time) string {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Sprintf("no usable pair: %v", err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return fmt.Sprintf("unparsable certificate: %v", err)
		}
	}
	if leaf.NotAfter.Sub(now) < servingCertRenewBefore {
		return fmt.Sprintf("expires at %s", leaf.NotAfter.Format(time.RFC3339))
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	names := make([]string, 0, len(ips)+len(dnsNames))
	for _, ip := range ips {
		names = append(names, ip.String())
	}
	names = append(names, dnsNames...)
	for _, name := range names {
		_, err := leaf.Verify(x509.VerifyOptions{
			DNSName:     name,
			Roots:       roots,
			CurrentTime: now,
			KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			return fmt.Sprintf("does not verify for %q: %v", name, err)
		}
	}
	return ""
}

// splitHosts sorts hosts into IP addresses and DNS names, dropping empties and duplicates
// while keeping the caller's order.
func splitHosts(hosts []string) (ips []net.IP, dnsNames []string) {
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
			h = h[1 : len(h)-1]
		}
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
			continue
		}
		h = strings.ToLower(h)
		if !slices.Contains(dnsNames, h) {
			dnsNames = append(dnsNames, h)
		}
	}
	return ips, dnsNames
}

// signLeaf signs a new key's certificate of template (subject, extended key usages,
// names) with the CA, valid from now (less the clock skew allowed) for validity or
// until the CA expires, and returns both as PEM.
func signLeaf(caCert *x509.Certificate, caKey crypto.Signer, template *x509.Certificate, now time.Time, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	keyPEM, err = keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return nil, nil, fmt.Errorf("generating a key: %w", err)
	}
	key, err := parseSigner(keyPEM)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("generating serial number: %w", err)
	}
	notAfter := now.Add(validity)
	if caCert.NotAfter.Before(notAfter) {
		notAfter = caCert.NotAfter
	}
	template.SerialNumber = serial.Add(serial, big.NewInt(1))
	template.NotBefore, template.NotAfter = now.Add(-clockSkew).UTC(), notAfter.UTC()
	template.KeyUsage = x509.KeyUsageDigitalSignature
	template.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, template, caCert, key.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the new certificate: %w", err)
	}
	certPEM, err = cert.EncodeCertificates(leaf)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the certificate: %w", err)
	}
	return certPEM, keyPEM, nil
}
