package auth

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/util/cert"
)

// verifyServingCert checks that certFile chains to caPEM as a server certificate for each
// host.
func verifyServingCert(t *testing.T, certFile string, caPEM []byte, hosts ...string) {
	t.Helper()
	certs, err := cert.CertsFromFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	roots, err := cert.NewPoolFromBytes(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range hosts {
		_, err := certs[0].Verify(x509.VerifyOptions{
			DNSName:   host,
			Roots:     roots,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		})
		if err != nil {
			t.Errorf("serving certificate does not verify for %q: %v", host, err)
		}
	}
}

func TestEnsureServingCert(t *testing.T) {
	creds := newTestCredentials(t)
	dir := t.TempDir()
	hosts := []string{"0.0.0.0", "127.0.0.1", "::1", "[::1]", "localhost", "Node-1.Example", ""}

	certFile, keyFile, err := EnsureServingCert(dir, creds, hosts)
	if err != nil {
		t.Fatal(err)
	}
	if certFile != filepath.Join(dir, ServingCertFile) || keyFile != filepath.Join(dir, ServingKeyFile) {
		t.Fatalf("got files %s, %s", certFile, keyFile)
	}
	verifyServingCert(t, certFile, creds.CACert, "0.0.0.0", "127.0.0.1", "::1", "localhost", "node-1.example")
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Fatalf("certificate and key do not pair: %v", err)
	}
	info, err := os.Stat(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("key has mode %o, want 600", mode)
	}
	first := readFile(t, certFile)

	// Same CA and hosts (in another order and spelling): reused.
	if _, _, err := EnsureServingCert(dir, creds, []string{"LOCALHOST", "node-1.example", "::1", "127.0.0.1", "0.0.0.0"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, certFile), first) {
		t.Error("a valid serving certificate was replaced")
	}

	// A subset of the hosts is still covered: reused.
	if _, _, err := EnsureServingCert(dir, creds, []string{"127.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, certFile), first) {
		t.Error("a serving certificate covering the hosts was replaced")
	}

	// A new host: regenerated, covering it.
	if _, _, err := EnsureServingCert(dir, creds, append(hosts, "10.1.2.3")); err != nil {
		t.Fatal(err)
	}
	second := readFile(t, certFile)
	if bytes.Equal(second, first) {
		t.Fatal("serving certificate was not regenerated for a new host")
	}
	verifyServingCert(t, certFile, creds.CACert, "10.1.2.3", "127.0.0.1", "localhost")

	// Another CA: regenerated, signed by it.
	other := newTestCredentials(t)
	if _, _, err := EnsureServingCert(dir, other, hosts); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(readFile(t, certFile), second) {
		t.Fatal("serving certificate was not regenerated for another CA")
	}
	verifyServingCert(t, certFile, other.CACert, "127.0.0.1")

	// A key that does not match (a crash between the two writes): regenerated.
	third := readFile(t, certFile)
	if err := os.WriteFile(keyFile, other.CAKey, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := EnsureServingCert(dir, other, hosts); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(readFile(t, certFile), third) {
		t.Fatal("serving certificate with a foreign key was not regenerated")
	}
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Fatalf("certificate and key do not pair: %v", err)
	}
}

func TestServingCertProblemNearExpiry(t *testing.T) {
	creds := newTestCredentials(t)
	dir := t.TempDir()
	certFile, keyFile, err := EnsureServingCert(dir, creds, []string{"localhost"})
	if err != nil {
		t.Fatal(err)
	}
	ca, _, err := creds.parseCA()
	if err != nil {
		t.Fatal(err)
	}
	ips, names := splitHosts([]string{"localhost"})
	if p := servingCertProblem(certFile, keyFile, ca, ips, names, time.Now()); p != "" {
		t.Fatalf("fresh certificate rejected: %s", p)
	}
	if p := servingCertProblem(certFile, keyFile, ca, ips, names, time.Now().Add(servingCertValidity-servingCertRenewBefore+time.Hour)); p == "" {
		t.Error("certificate expiring within the renewal window was accepted")
	}
}

func TestEnsureServingCertErrors(t *testing.T) {
	creds := newTestCredentials(t)
	if _, _, err := EnsureServingCert(t.TempDir(), creds, []string{"", " "}); !errors.Is(err, ErrNoHosts) {
		t.Errorf("no hosts: got %v, want ErrNoHosts", err)
	}
	broken := &ClusterCredentials{CACert: creds.CACert, CAKey: newTestCredentials(t).CAKey}
	if _, _, err := EnsureServingCert(t.TempDir(), broken, []string{"localhost"}); !errors.Is(err, ErrInvalidCredentials) {
		t.Errorf("mismatched CA key: got %v, want ErrInvalidCredentials", err)
	}
}
