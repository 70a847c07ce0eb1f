package migration

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"net"
	"slices"
	"testing"
	"time"
)

// Without a serving certificate given, /metrics gets a self-signed one for the host
// of its address (localhost for none): an ECDSA P-256 key, server authentication,
// valid for a year from an hour before it is made.
func TestSelfSignedServingCertificate(t *testing.T) {
	cases := []struct {
		addr     string
		dnsNames []string
		ips      []net.IP
	}{
		{addr: "127.0.0.1:10257", ips: []net.IP{net.ParseIP("127.0.0.1")}},
		{addr: "[::1]:10257", ips: []net.IP{net.ParseIP("::1")}},
		{addr: "metrics.example.com:10257", dnsNames: []string{"metrics.example.com"}},
		{addr: ":10257", dnsNames: []string{"localhost"}},
	}
	for _, c := range cases {
		t.Run(c.addr, func(t *testing.T) {
			before := time.Now().Truncate(time.Second)
			cert, err := servingCertificate(c.addr, "", "")
			if err != nil {
				t.Fatal(err)
			}
			after := time.Now()
			if len(cert.Certificate) != 1 || cert.Leaf == nil || !bytes.Equal(cert.Leaf.Raw, cert.Certificate[0]) {
				t.Fatalf("want one certificate, parsed as Leaf; got %d", len(cert.Certificate))
			}
			leaf := cert.Leaf
			if !slices.Equal(leaf.DNSNames, c.dnsNames) || !slices.EqualFunc(leaf.IPAddresses, c.ips, net.IP.Equal) {
				t.Errorf("SANs %v %v, want %v %v", leaf.DNSNames, leaf.IPAddresses, c.dnsNames, c.ips)
			}
			for _, host := range append(c.dnsNames, ipStrings(c.ips)...) {
				if err := leaf.VerifyHostname(host); err != nil {
					t.Error(err)
				}
			}
			key, ok := leaf.PublicKey.(*ecdsa.PublicKey)
			if !ok || key.Curve != elliptic.P256() {
				t.Errorf("public key %T, want ECDSA P-256", leaf.PublicKey)
			}
			if !bytes.Equal(leaf.RawIssuer, leaf.RawSubject) || leaf.CheckSignature(leaf.SignatureAlgorithm, leaf.RawTBSCertificate, leaf.Signature) != nil {
				t.Error("the certificate is not signed by its own key")
			}
			if leaf.IsCA || leaf.KeyUsage != x509.KeyUsageDigitalSignature || !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
				t.Errorf("IsCA %v, key usage %v, extended %v; want a server's leaf", leaf.IsCA, leaf.KeyUsage, leaf.ExtKeyUsage)
			}
			if leaf.NotBefore.Before(before.Add(-time.Hour)) || leaf.NotBefore.After(after.Add(-time.Hour)) ||
				leaf.NotAfter.Sub(leaf.NotBefore) != 365*24*time.Hour {
				t.Errorf("valid %v to %v, want a year from an hour before %v", leaf.NotBefore, leaf.NotAfter, before)
			}
			if leaf.SerialNumber.Sign() <= 0 {
				t.Errorf("serial number %v, want positive", leaf.SerialNumber)
			}
		})
	}
}

func ipStrings(ips []net.IP) []string {
	var s []string
	for _, ip := range ips {
		s = append(s, ip.String())
	}
	return s
}
