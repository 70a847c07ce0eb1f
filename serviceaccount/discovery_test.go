package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
)

const testJWKSURI = "https://concord.test/openid/v1/jwks"

func TestOpenIDConfiguration(t *testing.T) {
	ec, rsaKey := testECKey(), testRSAKey()
	for _, tc := range []struct {
		name string
		keys []crypto.PublicKey
		want string
	}{
		{"EC", []crypto.PublicKey{ec.Public()}, `{"issuer":"https://concord.test","jwks_uri":"https://concord.test/openid/v1/jwks",` +
			`"response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["ES256"]}`},
		{"RSA, EC and P-384, sorted, once", []crypto.PublicKey{rsaKey, ec.Public(), testOtherKey(), mustECKey(elliptic.P384())},
			`{"issuer":"https://concord.test","jwks_uri":"https://concord.test/openid/v1/jwks",` +
				`"response_types_supported":["id_token"],"subject_types_supported":["public"],"id_token_signing_alg_values_supported":["ES256","ES384","RS256"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OpenIDConfiguration(testIssuer, testJWKSURI, tc.keys)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("OpenIDConfiguration =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestOpenIDConfigurationRejects(t *testing.T) {
	keys := []crypto.PublicKey{testECKey().Public()}
	for _, tc := range []struct {
		name, issuer, jwksURI string
		keys                  []crypto.PublicKey
		wantErr               error
	}{
		{"empty issuer", "", testJWKSURI, keys, ErrInvalidConfig},
		{"http issuer", "http://concord.test", testJWKSURI, keys, ErrInvalidConfig},
		{"issuer not a URL", "concord", testJWKSURI, keys, ErrInvalidConfig},
		{"issuer with query", "https://concord.test?a=b", testJWKSURI, keys, ErrInvalidConfig},
		{"issuer with fragment", "https://concord.test#a", testJWKSURI, keys, ErrInvalidConfig},
		{"empty JWKS URI", testIssuer, "", keys, ErrInvalidConfig},
		{"http JWKS URI", testIssuer, "http://concord.test/openid/v1/jwks", keys, ErrInvalidConfig},
		{"no keys", testIssuer, testJWKSURI, nil, ErrInvalidConfig},
		{"unsupported key", testIssuer, testJWKSURI, []crypto.PublicKey{"key"}, ErrUnsupportedKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := OpenIDConfiguration(tc.issuer, tc.jwksURI, tc.keys); !errors.Is(err, tc.wantErr) {
				t.Errorf("OpenIDConfiguration: error %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// parseJWKS decodes a JWKS as a relying party would, checking each key's fields: the
// keys by key ID, and their algorithms.
func parseJWKS(t *testing.T, data []byte) (keys map[string]crypto.PublicKey, algs map[string]string) {
	t.Helper()
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		t.Fatal(err)
	}
	keys, algs = map[string]crypto.PublicKey{}, map[string]string{}
	b64 := func(s string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, k := range set.Keys {
		var fields []string
		for f := range k {
			fields = append(fields, f)
		}
		slices.Sort(fields)
		if k["use"] != "sig" {
			t.Errorf("key %s: use %q, want sig", k["kid"], k["use"])
		}
		switch k["kty"] {
		case "EC":
			if want := []string{"alg", "crv", "kid", "kty", "use", "x", "y"}; !slices.Equal(fields, want) {
				t.Errorf("EC key fields %v, want %v", fields, want)
			}
			curve := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}[k["crv"]]
			pub, err := ecdsa.ParseUncompressedPublicKey(curve, slices.Concat([]byte{4}, b64(k["x"]), b64(k["y"])))
			if err != nil {
				t.Fatalf("EC key %s: %v", k["kid"], err)
			}
			keys[k["kid"]] = pub
		case "RSA":
			if want := []string{"alg", "e", "kid", "kty", "n", "use"}; !slices.Equal(fields, want) {
				t.Errorf("RSA key fields %v, want %v", fields, want)
			}
			keys[k["kid"]] = &rsa.PublicKey{N: new(big.Int).SetBytes(b64(k["n"])), E: int(new(big.Int).SetBytes(b64(k["e"])).Int64())}
		default:
			t.Fatalf("key type %q", k["kty"])
		}
		algs[k["kid"]] = k["alg"]
	}
	return keys, algs
}

func TestJWKS(t *testing.T) {
	ec, rsaKey, p384 := testECKey(), testRSAKey(), mustECKey(elliptic.P384())
	// A private key stands for its public key; a key given twice is published once.
	data, err := JWKS([]crypto.PublicKey{ec.Public(), rsaKey, p384.Public(), ec})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), `{"keys":[{"use":"sig","kty":"EC","kid":"`) || !strings.Contains(string(data), `"e":"AQAB"`) {
		t.Errorf("JWKS = %s", data)
	}
	keys, algs := parseJWKS(t, data)
	want := map[string]string{kidOf(t, ec): AlgES256, kidOf(t, rsaKey): AlgRS256, kidOf(t, p384): AlgES384}
	if diff := cmp.Diff(want, algs); diff != "" {
		t.Errorf("key IDs and algorithms (-want +got):\n%s", diff)
	}
	for _, k := range []crypto.Signer{ec, rsaKey, p384} {
		pub, ok := keys[kidOf(t, k)].(interface{ Equal(crypto.PublicKey) bool })
		if !ok || !pub.Equal(k.Public()) {
			t.Errorf("the JWKS's %T key is not the one given", k)
		}
	}

	// A relying party verifies tokens with the key the JWKS gives for their kid.
	for _, signer := range []crypto.Signer{ec, rsaKey, p384} {
		token := newTestIssuer(t, testIssuer, signer).mustIssue(t, testRequest(nil))
		parsed, err := jwt.Parse(token, func(tok *jwt.Token) (any, error) {
			kid, _ := tok.Header["kid"].(string)
			if tok.Method.Alg() != algs[kid] {
				return nil, errors.New("algorithm is not the key's")
			}
			return keys[kid], nil
		}, jwt.WithTimeFunc(func() time.Time { return testNow }), jwt.WithIssuer(testIssuer), jwt.WithAudience("api"))
		if err != nil || !parsed.Valid {
			t.Errorf("verifying a %T token with the JWKS: %v", signer, err)
		}
	}

	// So does an Authenticator given the JWKS's keys.
	f := newFixture(t, ec, func(cfg *AuthenticatorConfig) {
		cfg.Keys = nil
		for _, k := range keys {
			cfg.Keys = append(cfg.Keys, k)
		}
	})
	if _, ok, err := f.authn.AuthenticateToken(t.Context(), f.issue(t, testRequest(nil))); !ok || err != nil {
		t.Errorf("AuthenticateToken with the JWKS's keys = %v, %v", ok, err)
	}
}

func TestJWKSRejects(t *testing.T) {
	for _, tc := range []struct {
		name    string
		keys    []crypto.PublicKey
		wantErr error
	}{
		{"no keys", nil, ErrInvalidConfig},
		{"P-224", []crypto.PublicKey{mustECKey(elliptic.P224()).Public()}, ErrUnsupportedKey},
		{"not a key", []crypto.PublicKey{42}, ErrUnsupportedKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := JWKS(tc.keys); !errors.Is(err, tc.wantErr) {
				t.Errorf("JWKS: error %v, want %v", err, tc.wantErr)
			}
		})
	}
}
