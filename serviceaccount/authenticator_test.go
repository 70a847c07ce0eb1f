package serviceaccount

import (
	"context"
	"crypto"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

const oldIssuer = "https://old.test"

// accounts is a fake store of service accounts: "namespace/name" to UID.
type accounts struct {
	mu   sync.RWMutex
	uids map[string]string
	err  error // if set, every lookup fails with it
}

func (a *accounts) lookup(_ context.Context, namespace, name string) (string, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.err != nil {
		return "", a.err
	}
	uid, ok := a.uids[namespace+"/"+name]
	if !ok {
		return "", fmt.Errorf("%w: serviceaccounts %q not found", ErrServiceAccountNotFound, name)
	}
	return uid, nil
}

func (a *accounts) set(namespace, name, uid string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if uid == "" {
		delete(a.uids, namespace+"/"+name)
	} else {
		a.uids[namespace+"/"+name] = uid
	}
}

// fixture is an Issuer of testIssuer and an Authenticator of its tokens (and of
// oldIssuer's), whose clock is testNow and whose API audience is "api".
type fixture struct {
	issuer   *Issuer
	authn    *Authenticator
	accounts *accounts
}

func newFixture(t *testing.T, key crypto.Signer, change func(*AuthenticatorConfig)) *fixture {
	t.Helper()
	f := &fixture{
		issuer:   newTestIssuer(t, testIssuer, key),
		accounts: &accounts{uids: map[string]string{"ns1/builder": "sa-uid"}},
	}
	cfg := AuthenticatorConfig{
		Issuers:      []string{testIssuer, oldIssuer},
		Keys:         []crypto.PublicKey{key.Public()},
		APIAudiences: []string{"api"},
		Lookup:       f.accounts.lookup,
		Now:          func() time.Time { return testNow },
	}
	if change != nil {
		change(&cfg)
	}
	var err error
	if f.authn, err = NewAuthenticator(cfg); err != nil {
		t.Fatal(err)
	}
	return f
}

// issue returns a token of f's issuer for r.
func (f *fixture) issue(t *testing.T, r Request) string {
	t.Helper()
	token, _, err := f.issuer.Issue(r)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// validClaims are the claims of a valid token of ns1/builder, for "api".
func validClaims() jwt.MapClaims {
	return jwt.MapClaims{
		"iss": testIssuer, "sub": "system:serviceaccount:ns1:builder", "aud": []string{"api"},
		"exp": testNow.Unix() + 3600, "iat": testNow.Unix(), "nbf": testNow.Unix(), "jti": "the-jti",
		"kubernetes.io": map[string]any{"namespace": "ns1", "serviceaccount": map[string]any{"name": "builder", "uid": "sa-uid"}},
	}
}

// sign returns a token of claims signed by key with method; header entries are added
// to the header, or removed when nil.
func sign(t *testing.T, method jwt.SigningMethod, key any, header map[string]any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	for k, v := range header {
		if v == nil {
			delete(tok.Header, k)
		} else {
			tok.Header[k] = v
		}
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func kidOf(t *testing.T, key crypto.PublicKey) string {
	t.Helper()
	kid, err := KeyID(key)
	if err != nil {
		t.Fatal(err)
	}
	return kid
}

// wantUser is the user of ns1/builder's token with jti, with extra besides the
// credential ID.
func wantUser(jti string, extra map[string][]string) *user.DefaultInfo {
	u := &user.DefaultInfo{
		Name:   "system:serviceaccount:ns1:builder",
		UID:    "sa-uid",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns1"},
		Extra:  map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=" + jti}},
	}
	for k, v := range extra {
		u.Extra[k] = v
	}
	return u
}

func jtiOf(t *testing.T, token string) string {
	t.Helper()
	_, payload := decodeJWT(t, token)
	jti, _ := payload["jti"].(string)
	return jti
}

func TestAuthenticateRoundTrip(t *testing.T) {
	for _, key := range []struct {
		name string
		key  crypto.Signer
	}{{"ES256", testECKey()}, {"RS256", testRSAKey()}} {
		f := newFixture(t, key.key, nil)
		for _, tc := range []struct {
			name      string
			audiences []string
			ctxAuds   authenticator.Audiences // nil: none in the context
			want      authenticator.Audiences
		}{
			{"API audience", []string{"api"}, nil, authenticator.Audiences{"api"}},
			{"one of the token's audiences is the API's", []string{"vault", "api"}, nil, authenticator.Audiences{"api"}},
			{"request audiences", []string{"vault", "api"}, authenticator.Audiences{"vault", "other"}, authenticator.Audiences{"vault"}},
			{"request audiences, several", []string{"vault", "api"}, authenticator.Audiences{"api", "vault"}, authenticator.Audiences{"api", "vault"}},
		} {
			t.Run(key.name+"/"+tc.name, func(t *testing.T) {
				r := testRequest(nil)
				r.Audiences = tc.audiences
				token := f.issue(t, r)
				ctx := t.Context()
				if tc.ctxAuds != nil {
					ctx = authenticator.WithAudiences(ctx, tc.ctxAuds)
				}
				resp, ok, err := f.authn.AuthenticateToken(ctx, token)
				if err != nil || !ok {
					t.Fatalf("AuthenticateToken = %v, %v", ok, err)
				}
				if diff := cmp.Diff(wantUser(jtiOf(t, token), nil), resp.User); diff != "" {
					t.Errorf("user (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.want, resp.Audiences); diff != "" {
					t.Errorf("audiences (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestAuthenticateRejects(t *testing.T) {
	ec := testECKey()
	other := testOtherKey()
	p384 := mustECKey(elliptic.P384())
	pkix, err := x509.MarshalPKIXPublicKey(ec.Public())
	if err != nil {
		t.Fatal(err)
	}
	kid := kidOf(t, ec)
	withClaims := func(change func(c jwt.MapClaims)) jwt.MapClaims {
		c := validClaims()
		change(c)
		return c
	}
	issued := func(change func(r *Request)) func(t *testing.T, f *fixture) string {
		return func(t *testing.T, f *fixture) string {
			r := testRequest(nil)
			if change != nil {
				change(&r)
			}
			return f.issue(t, r)
		}
	}
	signed := func(method jwt.SigningMethod, key any, header map[string]any, c jwt.MapClaims) func(t *testing.T, f *fixture) string {
		return func(t *testing.T, _ *fixture) string { return sign(t, method, key, header, c) }
	}
	for _, tc := range []struct {
		name      string
		token     func(t *testing.T, f *fixture) string
		ctxAuds   authenticator.Audiences
		extraKeys []crypto.PublicKey // trusted besides the issuer's
		setup     func(f *fixture)
		wantErr   error
	}{
		{name: "tampered signature", token: func(t *testing.T, f *fixture) string {
			return mangle(t, issued(nil)(t, f), 2, func(b []byte) []byte { b[0] ^= 1; return b })
		}, wantErr: ErrInvalidToken},
		{name: "tampered claims", token: func(t *testing.T, f *fixture) string {
			return mangle(t, issued(nil)(t, f), 1, func(b []byte) []byte {
				return []byte(strings.ReplaceAll(string(b), `"builder"`, `"admin"`))
			})
		}, wantErr: ErrInvalidToken},
		{name: "another key", token: signed(jwt.SigningMethodES256, other, map[string]any{"kid": kidOf(t, other)}, validClaims()), wantErr: ErrInvalidToken},
		{name: "another key, our key ID", token: signed(jwt.SigningMethodES256, other, map[string]any{"kid": kid}, validClaims()), wantErr: ErrInvalidToken},
		{name: "another key, no key ID", token: signed(jwt.SigningMethodES256, other, nil, validClaims()), wantErr: ErrInvalidToken},
		{name: "key ID not a string", token: signed(jwt.SigningMethodES256, ec, map[string]any{"kid": 7}, validClaims()), wantErr: ErrInvalidToken},
		{name: "alg none", token: signed(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, map[string]any{"kid": kid}, validClaims()), wantErr: ErrInvalidToken},
		{name: "HMAC with the public key", token: signed(jwt.SigningMethodHS256, pkix, map[string]any{"kid": kid}, validClaims()), wantErr: ErrInvalidToken},
		{name: "ES384 header on a P-256 key", token: func(t *testing.T, _ *fixture) string {
			// Signed right, then relabelled: the algorithm must be the key's.
			return mangle(t, sign(t, jwt.SigningMethodES256, ec, map[string]any{"kid": kid}, validClaims()), 0, func([]byte) []byte {
				return []byte(`{"alg":"ES384","kid":"` + kid + `"}`)
			})
		}, wantErr: ErrInvalidToken},
		{name: "ES384 header on a P-256 key, a P-384 key trusted", token: func(t *testing.T, _ *fixture) string {
			return mangle(t, sign(t, jwt.SigningMethodES256, ec, map[string]any{"kid": kid}, validClaims()), 0, func([]byte) []byte {
				return []byte(`{"alg":"ES384","kid":"` + kid + `"}`)
			})
		}, extraKeys: []crypto.PublicKey{p384.Public()}, wantErr: ErrInvalidToken},
		{name: "expired", token: issued(func(r *Request) { r.Now = testNow.Add(-2 * time.Hour) }), wantErr: ErrExpired},
		{name: "expired beyond the leeway", token: issued(func(r *Request) {
			r.Now, r.ExpirationSeconds = testNow.Add(-time.Hour-Leeway-2*time.Second), 3600
		}), wantErr: ErrExpired},
		{name: "not valid yet", token: issued(func(r *Request) { r.Now = testNow.Add(2 * Leeway) }), wantErr: ErrNotYetValid},
		{name: "nbf in the future", token: signed(jwt.SigningMethodES256, ec, map[string]any{"kid": kid}, withClaims(func(c jwt.MapClaims) {
			c["nbf"] = testNow.Add(2 * Leeway).Unix()
		})), wantErr: ErrNotYetValid},
		{name: "no expiry", token: signed(jwt.SigningMethodES256, ec, map[string]any{"kid": kid}, withClaims(func(c jwt.MapClaims) { delete(c, "exp") })), wantErr: ErrInvalidToken},
		{name: "no kubernetes.io claim", token: signed(jwt.SigningMethodES256, ec, map[string]any{"kid": kid}, withClaims(func(c jwt.MapClaims) { delete(c, "kubernetes.io") })), wantErr: ErrInvalidToken},
		{name: "subject of another account", token: signed(jwt.SigningMethodES256, ec, map[string]any{"kid": kid}, withClaims(func(c jwt.MapClaims) {
			c["sub"] = "system:serviceaccount:kube-system:admin"
		})), wantErr: ErrInvalidToken},
		{name: "claims of the wrong type", token: signed(jwt.SigningMethodES256, ec, map[string]any{"kid": kid}, withClaims(func(c jwt.MapClaims) { c["exp"] = "tomorrow" })), wantErr: ErrInvalidToken},
		{name: "audience not the API's", token: issued(func(r *Request) { r.Audiences = []string{"vault"} }), wantErr: ErrWrongAudience},
		{name: "audience not the request's", token: issued(nil), ctxAuds: authenticator.Audiences{"vault"}, wantErr: ErrWrongAudience},
		{name: "request for no audience", token: issued(nil), ctxAuds: authenticator.Audiences{}, wantErr: ErrWrongAudience},
		{name: "account deleted", token: issued(nil), setup: func(f *fixture) { f.accounts.set("ns1", "builder", "") }, wantErr: ErrServiceAccountNotFound},
		{name: "account recreated", token: issued(nil), setup: func(f *fixture) { f.accounts.set("ns1", "builder", "new-uid") }, wantErr: ErrServiceAccountUIDMismatch},
		{name: "lookup fails", token: issued(nil), setup: func(f *fixture) { f.accounts.err = errStorage }, wantErr: errStorage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, ec, func(cfg *AuthenticatorConfig) { cfg.Keys = append(cfg.Keys, tc.extraKeys...) })
			token := tc.token(t, f)
			if tc.setup != nil {
				tc.setup(f)
			}
			ctx := t.Context()
			if tc.ctxAuds != nil {
				ctx = authenticator.WithAudiences(ctx, tc.ctxAuds)
			}
			resp, ok, err := f.authn.AuthenticateToken(ctx, token)
			if resp != nil || ok || !errors.Is(err, tc.wantErr) {
				t.Fatalf("AuthenticateToken = %v, %v, %v; want nil, false, %v", resp, ok, err, tc.wantErr)
			}
			t.Logf("rejected: %v", err)
			for i, part := range strings.Split(token, ".") {
				if part != "" && strings.Contains(err.Error(), part) {
					t.Errorf("the error quotes segment %d of the token: %v", i, err)
				}
			}
		})
	}
}

var errStorage = errors.New("etcd is unavailable")

// mangle returns token with its segment i (0 header, 1 payload, 2 signature) changed.
func mangle(t *testing.T, token string, i int, change func([]byte) []byte) string {
	t.Helper()
	parts := strings.Split(token, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatal(err)
	}
	parts[i] = base64.RawURLEncoding.EncodeToString(change(b))
	return strings.Join(parts, ".")
}

func TestAuthenticateLeeway(t *testing.T) {
	for _, tc := range []struct {
		name string
		now  time.Time // issuing time of a one-hour token
	}{
		{"expired within the leeway", testNow.Add(-time.Hour - Leeway/2)},
		{"issued ahead within the leeway", testNow.Add(Leeway / 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, testECKey(), nil)
			r := testRequest(nil)
			r.Now = tc.now
			if _, ok, err := f.authn.AuthenticateToken(t.Context(), f.issue(t, r)); !ok || err != nil {
				t.Errorf("AuthenticateToken = %v, %v; want accepted", ok, err)
			}
		})
	}
}

func TestAuthenticateNotOurs(t *testing.T) {
	ec := testECKey()
	f := newFixture(t, ec, nil)
	other := newTestIssuer(t, "https://elsewhere.test", ec)
	ours := f.issue(t, testRequest(nil))
	parts := strings.Split(ours, ".")
	for _, tc := range []struct {
		name  string
		token string
	}{
		{"empty", ""},
		{"opaque", "6d5f4a9c8e7b2a1d0f3e4c5b6a798877"},
		{"two segments", parts[0] + "." + parts[1]},
		{"four segments", ours + "." + parts[2]},
		{"JSON serialization", `{"payload":"` + parts[1] + `","signature":"` + parts[2] + `"}`},
		{"segments not base64", "a%b.c%d.e%f"},
		{"payload not JSON", parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte("nope")) + "." + parts[2]},
		{"header not JSON", base64.RawURLEncoding.EncodeToString([]byte("nope")) + "." + parts[1] + "." + parts[2]},
		{"signature not base64", parts[0] + "." + parts[1] + ".!!!"},
		{"another issuer", other.mustIssue(t, testRequest(nil))},
		{"no issuer", sign(t, jwt.SigningMethodES256, ec, nil, jwt.MapClaims{"sub": "x"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, ok, err := f.authn.AuthenticateToken(t.Context(), tc.token)
			if resp != nil || ok || err != nil {
				t.Errorf("AuthenticateToken = %v, %v, %v; want nil, false, nil", resp, ok, err)
			}
		})
	}
}

func (i *Issuer) mustIssue(t *testing.T, r Request) string {
	t.Helper()
	token, _, err := i.Issue(r)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

func TestAuthenticateIssuersAndKeys(t *testing.T) {
	ec, rsaKey, other := testECKey(), testRSAKey(), testOtherKey()
	f := newFixture(t, ec, func(cfg *AuthenticatorConfig) {
		cfg.APIAudiences = nil // defaults to the issuers
		cfg.Keys = []crypto.PublicKey{rsaKey, ec.Public()}
	})
	old := newTestIssuer(t, oldIssuer, rsaKey)
	fromOld := testRequest(nil)
	fromOld.Audiences = []string{oldIssuer}
	fromNew := testRequest(nil)
	fromNew.Audiences = []string{testIssuer, "vault"}
	noKID := validClaims()
	noKID["aud"] = []string{testIssuer}
	for _, tc := range []struct {
		name     string
		token    string
		wantAuds authenticator.Audiences
	}{
		{"this server's", f.issue(t, fromNew), authenticator.Audiences{testIssuer}},
		{"the former issuer's, another key", old.mustIssue(t, fromOld), authenticator.Audiences{oldIssuer}},
		{"without key ID", sign(t, jwt.SigningMethodES256, ec, nil, noKID), authenticator.Audiences{testIssuer}},
		{"without audience (legacy)", sign(t, jwt.SigningMethodES256, ec, nil, func() jwt.MapClaims {
			c := validClaims()
			delete(c, "aud")
			return c
		}()), authenticator.Audiences{testIssuer, oldIssuer}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, ok, err := f.authn.AuthenticateToken(t.Context(), tc.token)
			if !ok || err != nil {
				t.Fatalf("AuthenticateToken = %v, %v", ok, err)
			}
			if diff := cmp.Diff(tc.wantAuds, resp.Audiences); diff != "" {
				t.Errorf("audiences (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a key not in Keys", func(t *testing.T) {
		token := newTestIssuer(t, testIssuer, other).mustIssue(t, fromNew)
		if _, ok, err := f.authn.AuthenticateToken(t.Context(), token); ok || !errors.Is(err, ErrInvalidToken) {
			t.Errorf("AuthenticateToken = %v, %v; want ErrInvalidToken", ok, err)
		}
	})
}

// boundObjects is a fake store of the objects tokens are bound to: "Kind/namespace/name"
// to UID. It records the lookups.
type boundObjects struct {
	mu      sync.Mutex
	uids    map[string]string
	lookups []string
}

func (b *boundObjects) lookup(_ context.Context, kind, namespace, name string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := kind + "/" + namespace + "/" + name
	b.lookups = append(b.lookups, key)
	uid, ok := b.uids[key]
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrBoundObjectNotFound, key)
	}
	return uid, nil
}

func TestAuthenticateBoundObjects(t *testing.T) {
	const (
		podName = "authentication.kubernetes.io/pod-name"
		podUID  = "authentication.kubernetes.io/pod-uid"
		nodeNm  = "authentication.kubernetes.io/node-name"
		nodeUID = "authentication.kubernetes.io/node-uid"
	)
	existing := map[string]string{"Pod/ns1/p": "pod-uid", "Secret/ns1/s": "secret-uid", "Node//n": "node-uid"}
	for _, tc := range []struct {
		name        string
		bound       *BoundObject
		wantExtra   map[string][]string
		wantLookups []string
		gone        string // an object of existing deleted before authenticating
		recreated   string // an object of existing given a new UID before authenticating
	}{
		{name: "pod", bound: &BoundObject{Kind: KindPod, Name: "p", UID: "pod-uid"},
			wantExtra: map[string][]string{podName: {"p"}, podUID: {"pod-uid"}}, wantLookups: []string{"Pod/ns1/p"}},
		{name: "pod on a node", bound: &BoundObject{Kind: KindPod, Name: "p", UID: "pod-uid", NodeName: "n", NodeUID: "node-uid"},
			wantExtra:   map[string][]string{podName: {"p"}, podUID: {"pod-uid"}, nodeNm: {"n"}, nodeUID: {"node-uid"}},
			wantLookups: []string{"Pod/ns1/p"}},
		{name: "pod on a node without object", bound: &BoundObject{Kind: KindPod, Name: "p", UID: "pod-uid", NodeName: "gone"},
			wantExtra:   map[string][]string{podName: {"p"}, podUID: {"pod-uid"}, nodeNm: {"gone"}},
			wantLookups: []string{"Pod/ns1/p"}},
		{name: "secret", bound: &BoundObject{Kind: KindSecret, Name: "s", UID: "secret-uid"}, wantLookups: []string{"Secret/ns1/s"}},
		{name: "node", bound: &BoundObject{Kind: KindNode, Name: "n", UID: "node-uid"},
			wantExtra: map[string][]string{nodeNm: {"n"}, nodeUID: {"node-uid"}}, wantLookups: []string{"Node//n"}},
		{name: "pod deleted", bound: &BoundObject{Kind: KindPod, Name: "p", UID: "pod-uid"}, gone: "Pod/ns1/p"},
		{name: "pod recreated", bound: &BoundObject{Kind: KindPod, Name: "p", UID: "pod-uid"}, recreated: "Pod/ns1/p"},
		{name: "secret deleted", bound: &BoundObject{Kind: KindSecret, Name: "s", UID: "secret-uid"}, gone: "Secret/ns1/s"},
		{name: "node deleted", bound: &BoundObject{Kind: KindNode, Name: "n", UID: "node-uid"}, gone: "Node//n"},
		{name: "node recreated", bound: &BoundObject{Kind: KindNode, Name: "n", UID: "node-uid"}, recreated: "Node//n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objects := &boundObjects{uids: map[string]string{}}
			for k, v := range existing {
				objects.uids[k] = v
			}
			delete(objects.uids, tc.gone)
			if tc.recreated != "" {
				objects.uids[tc.recreated] = "new-uid"
			}
			f := newFixture(t, testECKey(), func(cfg *AuthenticatorConfig) { cfg.LookupBoundObject = objects.lookup })
			token := f.issue(t, testRequest(tc.bound))
			resp, ok, err := f.authn.AuthenticateToken(t.Context(), token)
			if tc.gone != "" || tc.recreated != "" {
				if ok || !errors.Is(err, ErrBoundObjectInvalid) || (tc.gone != "") != errors.Is(err, ErrBoundObjectNotFound) {
					t.Fatalf("AuthenticateToken = %v, %v; want ErrBoundObjectInvalid", ok, err)
				}
				return
			}
			if !ok || err != nil {
				t.Fatalf("AuthenticateToken = %v, %v", ok, err)
			}
			if diff := cmp.Diff(wantUser(jtiOf(t, token), tc.wantExtra), resp.User); diff != "" {
				t.Errorf("user (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLookups, objects.lookups); diff != "" {
				t.Errorf("lookups (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("no LookupBoundObject", func(t *testing.T) {
		f := newFixture(t, testECKey(), nil)
		token := f.issue(t, testRequest(&BoundObject{Kind: KindPod, Name: "deleted", UID: "u"}))
		if _, ok, err := f.authn.AuthenticateToken(t.Context(), token); !ok || err != nil {
			t.Errorf("AuthenticateToken = %v, %v; want accepted (bound objects unchecked)", ok, err)
		}
	})
}

func TestNewAuthenticatorRejects(t *testing.T) {
	lookup := (&accounts{}).lookup
	for _, tc := range []struct {
		name    string
		cfg     AuthenticatorConfig
		wantErr error
	}{
		{"no issuers", AuthenticatorConfig{Keys: []crypto.PublicKey{testECKey().Public()}, Lookup: lookup}, ErrInvalidConfig},
		{"empty issuer", AuthenticatorConfig{Issuers: []string{""}, Keys: []crypto.PublicKey{testECKey().Public()}, Lookup: lookup}, ErrInvalidConfig},
		{"no keys", AuthenticatorConfig{Issuers: []string{testIssuer}, Lookup: lookup}, ErrInvalidConfig},
		{"no lookup", AuthenticatorConfig{Issuers: []string{testIssuer}, Keys: []crypto.PublicKey{testECKey().Public()}}, ErrInvalidConfig},
		{"unsupported key", AuthenticatorConfig{Issuers: []string{testIssuer}, Keys: []crypto.PublicKey{[]byte("secret")}, Lookup: lookup}, ErrUnsupportedKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewAuthenticator(tc.cfg); !errors.Is(err, tc.wantErr) {
				t.Errorf("NewAuthenticator: error %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// TestAuthenticateConcurrently issues and authenticates tokens of two keys from many
// goroutines while accounts change (run with -race).
func TestAuthenticateConcurrently(t *testing.T) {
	ec, rsaKey := testECKey(), testRSAKey()
	f := newFixture(t, ec, func(cfg *AuthenticatorConfig) { cfg.Keys = append(cfg.Keys, rsaKey.Public()) })
	rsaIssuer := newTestIssuer(t, testIssuer, rsaKey)
	f.accounts.set("ns1", "other", "other-uid")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			issuer := f.issuer
			if g%2 == 1 {
				issuer = rsaIssuer
			}
			for range 20 {
				token, _, err := issuer.Issue(testRequest(nil))
				if err != nil {
					t.Error(err)
					return
				}
				resp, ok, err := f.authn.AuthenticateToken(t.Context(), token)
				if !ok || err != nil || resp.User.GetName() != "system:serviceaccount:ns1:builder" {
					t.Errorf("AuthenticateToken = %v, %v, %v", resp, ok, err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 100 {
			f.accounts.set("ns1", "other", fmt.Sprint("uid-", i))
		}
	})
	wg.Wait()
}
