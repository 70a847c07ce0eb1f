package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"sync"
	"testing"
)

// Test keys, generated once (RSA generation is slow, more so under -race).
var (
	testECKey    = sync.OnceValue(func() *ecdsa.PrivateKey { return mustECKey(elliptic.P256()) })
	testOtherKey = sync.OnceValue(func() *ecdsa.PrivateKey { return mustECKey(elliptic.P256()) })
	testRSAKey   = sync.OnceValue(func() *rsa.PrivateKey {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		return k
	})
)

func mustECKey(c elliptic.Curve) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(c, rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// must returns b, failing t on err.
func must(t *testing.T) func(b []byte, err error) []byte {
	return func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

func TestParsePrivateKey(t *testing.T) {
	ec := testECKey()
	rsaKey := testRSAKey()
	p384 := mustECKey(elliptic.P384())
	p224 := mustECKey(elliptic.P224())
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der := must(t)
	ecSEC1 := pemOf("EC PRIVATE KEY", der(x509.MarshalECPrivateKey(ec)))
	p256OID := []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07}
	generated, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		pem     []byte
		want    crypto.PublicKey // nil: any key
		wantAlg string
		wantErr error
	}{
		{"EC SEC 1", ecSEC1, ec.Public(), AlgES256, nil},
		{"EC SEC 1 after EC PARAMETERS", append(pemOf("EC PARAMETERS", p256OID), ecSEC1...), ec.Public(), AlgES256, nil},
		{"EC PKCS #8", pemOf("PRIVATE KEY", der(x509.MarshalPKCS8PrivateKey(ec))), ec.Public(), AlgES256, nil},
		{"EC P-384", pemOf("PRIVATE KEY", der(x509.MarshalPKCS8PrivateKey(p384))), p384.Public(), AlgES384, nil},
		{"GenerateKey's", generated, nil, AlgES256, nil},
		{"RSA PKCS #1", pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), rsaKey.Public(), AlgRS256, nil},
		{"RSA PKCS #8", pemOf("PRIVATE KEY", der(x509.MarshalPKCS8PrivateKey(rsaKey))), rsaKey.Public(), AlgRS256, nil},
		{"Ed25519", pemOf("PRIVATE KEY", der(x509.MarshalPKCS8PrivateKey(ed))), nil, "", ErrUnsupportedKey},
		{"EC P-224", pemOf("EC PRIVATE KEY", der(x509.MarshalECPrivateKey(p224))), nil, "", ErrUnsupportedKey},
		{"encrypted", pemOf("ENCRYPTED PRIVATE KEY", []byte{0x30, 0x00}), nil, "", ErrUnsupportedKey},
		{"legacy encrypted", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-256-CBC,00"}, Bytes: []byte{1}}), nil, "", ErrUnsupportedKey},
		{"corrupt", pemOf("EC PRIVATE KEY", []byte("not DER")), nil, "", ErrInvalidKey},
		{"public key only", pemOf("PUBLIC KEY", der(x509.MarshalPKIXPublicKey(ec.Public()))), nil, "", ErrNoPrivateKey},
		{"not PEM", []byte("hello"), nil, "", ErrNoPrivateKey},
		{"empty", nil, nil, "", ErrNoPrivateKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, err := ParsePrivateKey(tc.pem)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("ParsePrivateKey: error %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			if tc.want != nil && !tc.want.(interface{ Equal(crypto.PublicKey) bool }).Equal(key.Public()) {
				t.Errorf("ParsePrivateKey returned another key")
			}
			if alg, err := Algorithm(key); err != nil || alg != tc.wantAlg {
				t.Errorf("Algorithm = %q, %v; want %q", alg, err, tc.wantAlg)
			}
		})
	}
}

func TestKeyID(t *testing.T) {
	for _, key := range []crypto.Signer{testECKey(), testRSAKey()} {
		der, err := x509.MarshalPKIXPublicKey(key.Public())
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(der)
		want := base64.RawURLEncoding.EncodeToString(sum[:])
		for _, k := range []crypto.PublicKey{key.Public(), key} {
			if got, err := KeyID(k); err != nil || got != want {
				t.Errorf("KeyID(%T) = %q, %v; want %q", k, got, err, want)
			}
		}
		if len(want) != 43 {
			t.Errorf("key ID %q is not 43 characters long", want)
		}
	}
	if _, err := KeyID("not a key"); !errors.Is(err, ErrUnsupportedKey) {
		t.Errorf("KeyID(string): error %v, want ErrUnsupportedKey", err)
	}
}
