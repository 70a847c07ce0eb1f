package serviceaccount

import (
	"crypto"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
)

const testIssuer = "https://concord.test"

// testNow is the clock of the tests (with nanoseconds, which tokens drop).
var testNow = time.Date(2030, 1, 2, 3, 4, 5, 678, time.UTC)

// decodeJWT returns the header and the payload of a compact JWS, as JSON objects.
func decodeJWT(t *testing.T, token string) (header, payload map[string]any) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d segments, want 3", len(parts))
	}
	for i, v := range []*map[string]any{&header, &payload} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatalf("segment %d: %v", i, err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("segment %d: %v", i, err)
		}
	}
	return header, payload
}

func newTestIssuer(t *testing.T, iss string, key crypto.Signer) *Issuer {
	t.Helper()
	i, err := NewIssuer(iss, key)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// testRequest returns a Request for service account ns1/builder, for audience "api",
// for an hour from testNow, bound to b.
func testRequest(b *BoundObject) Request {
	return Request{
		Namespace: "ns1", Name: "builder", UID: "sa-uid",
		Audiences: []string{"api"}, ExpirationSeconds: 3600, Now: testNow, BoundObject: b,
	}
}

func TestIssueClaims(t *testing.T) {
	sa := map[string]any{"name": "builder", "uid": "sa-uid"}
	for _, tc := range []struct {
		name  string
		bound *BoundObject
		want  map[string]any // of "kubernetes.io", besides namespace and serviceaccount
	}{
		{"unbound", nil, map[string]any{}},
		{"pod", &BoundObject{Kind: KindPod, Name: "p", UID: "pod-uid"},
			map[string]any{"pod": map[string]any{"name": "p", "uid": "pod-uid"}}},
		{"pod and its node", &BoundObject{Kind: KindPod, Name: "p", UID: "pod-uid", NodeName: "n", NodeUID: "node-uid"},
			map[string]any{"pod": map[string]any{"name": "p", "uid": "pod-uid"}, "node": map[string]any{"name": "n", "uid": "node-uid"}}},
		{"pod and a node without object", &BoundObject{Kind: KindPod, Name: "p", UID: "pod-uid", NodeName: "n"},
			map[string]any{"pod": map[string]any{"name": "p", "uid": "pod-uid"}, "node": map[string]any{"name": "n"}}},
		{"secret", &BoundObject{Kind: KindSecret, Name: "s", UID: "secret-uid"},
			map[string]any{"secret": map[string]any{"name": "s", "uid": "secret-uid"}}},
		{"node", &BoundObject{Kind: KindNode, Name: "n", UID: "node-uid"},
			map[string]any{"node": map[string]any{"name": "n", "uid": "node-uid"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			issuer := newTestIssuer(t, testIssuer, testECKey())
			token, expires, err := issuer.Issue(testRequest(tc.bound))
			if err != nil {
				t.Fatal(err)
			}
			sec := float64(testNow.Unix())
			if want := time.Unix(testNow.Unix()+3600, 0); !expires.Equal(want) {
				t.Errorf("expiresAt = %v, want %v", expires, want)
			}
			header, payload := decodeJWT(t, token)
			if diff := cmp.Diff(map[string]any{"alg": "ES256", "kid": issuer.KeyID()}, header); diff != "" {
				t.Errorf("header (-want +got):\n%s", diff)
			}
			jti, _ := payload["jti"].(string)
			if u, err := uuid.Parse(jti); err != nil || u.Version() != 4 {
				t.Errorf("jti %q is not a random UUID", jti)
			}
			delete(payload, "jti")
			k8s := map[string]any{"namespace": "ns1", "serviceaccount": sa}
			for k, v := range tc.want {
				k8s[k] = v
			}
			want := map[string]any{
				"iss": testIssuer, "sub": "system:serviceaccount:ns1:builder", "aud": []any{"api"},
				"exp": sec + 3600, "iat": sec, "nbf": sec, "kubernetes.io": k8s,
			}
			if diff := cmp.Diff(want, payload); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIssueJTIsDiffer(t *testing.T) {
	issuer := newTestIssuer(t, testIssuer, testECKey())
	seen := map[any]bool{}
	for range 10 {
		token, _, err := issuer.Issue(testRequest(nil))
		if err != nil {
			t.Fatal(err)
		}
		_, payload := decodeJWT(t, token)
		if seen[payload["jti"]] {
			t.Fatalf("jti %v issued twice", payload["jti"])
		}
		seen[payload["jti"]] = true
	}
}

func TestIssueNowDefaultsToClock(t *testing.T) {
	issuer := newTestIssuer(t, testIssuer, testECKey())
	r := testRequest(nil)
	r.Now = time.Time{}
	before := time.Now().Truncate(time.Second)
	_, expires, err := issuer.Issue(r)
	if err != nil {
		t.Fatal(err)
	}
	if lifetime := expires.Sub(before); lifetime < time.Hour || lifetime > time.Hour+time.Minute {
		t.Errorf("token expires %v after the test started, want about an hour", lifetime)
	}
}

func TestIssueInvalidRequest(t *testing.T) {
	issuer := newTestIssuer(t, testIssuer, testECKey())
	for _, tc := range []struct {
		name   string
		change func(r *Request)
	}{
		{"no namespace", func(r *Request) { r.Namespace = "" }},
		{"no name", func(r *Request) { r.Name = "" }},
		{"no UID", func(r *Request) { r.UID = "" }},
		{"no audiences", func(r *Request) { r.Audiences = nil }},
		{"an empty audience", func(r *Request) { r.Audiences = []string{"api", ""} }},
		{"no expiration", func(r *Request) { r.ExpirationSeconds = 0 }},
		{"negative expiration", func(r *Request) { r.ExpirationSeconds = -1 }},
		{"expiration too long", func(r *Request) { r.ExpirationSeconds = MaxExpirationSeconds + 1 }},
		{"bound to a configmap", func(r *Request) { r.BoundObject = &BoundObject{Kind: "ConfigMap", Name: "c", UID: "u"} }},
		{"bound object without UID", func(r *Request) { r.BoundObject = &BoundObject{Kind: KindPod, Name: "p"} }},
		{"bound object without name", func(r *Request) { r.BoundObject = &BoundObject{Kind: KindPod, UID: "u"} }},
		{"secret with a node", func(r *Request) {
			r.BoundObject = &BoundObject{Kind: KindSecret, Name: "s", UID: "u", NodeName: "n"}
		}},
		{"pod's node UID without name", func(r *Request) {
			r.BoundObject = &BoundObject{Kind: KindPod, Name: "p", UID: "u", NodeUID: "n"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testRequest(nil)
			tc.change(&r)
			token, _, err := issuer.Issue(r)
			if !errors.Is(err, ErrInvalidRequest) || token != "" {
				t.Errorf("Issue = %q, %v; want ErrInvalidRequest", token, err)
			}
		})
	}
}

func TestNewIssuerRejects(t *testing.T) {
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		issuer  string
		key     crypto.Signer
		wantErr error
	}{
		{"no issuer", "", testECKey(), ErrInvalidConfig},
		{"Ed25519 key", testIssuer, ed, ErrUnsupportedKey},
		{"P-224 key", testIssuer, mustECKey(elliptic.P224()), ErrUnsupportedKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewIssuer(tc.issuer, tc.key); !errors.Is(err, tc.wantErr) {
				t.Errorf("NewIssuer: error %v, want %v", err, tc.wantErr)
			}
		})
	}
}
