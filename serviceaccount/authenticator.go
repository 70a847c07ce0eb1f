package serviceaccount

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	apiserverserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	tokenjwt "k8s.io/apiserver/pkg/authentication/token/jwt"
	"k8s.io/klog/v2"
)

// Leeway is the clock skew AuthenticateToken tolerates on a token's exp, nbf and iat:
// one minute, as Kubernetes.
const Leeway = time.Minute

// AuthenticatorConfig is what NewAuthenticator builds an Authenticator from.
type AuthenticatorConfig struct {
	// Issuers are the "iss" values whose tokens the Authenticator accepts, at least
	// one. The first is this server's (the one its Issuer signs with); more let tokens
	// of a former issuer be accepted while clients move over.
	Issuers []string
	// Keys verify signatures: a token is accepted if one of them, of the token's
	// algorithm, verifies it. When the token's header has a "kid", only the keys with
	// that KeyID are tried. RSA and ECDSA public keys; a private key stands for its
	// public key. At least one.
	Keys []crypto.PublicKey
	// APIAudiences are the audiences of the API server: a request whose context
	// carries no audiences (authenticator.WithAudiences) is for these. Empty means
	// Issuers, as kube-apiserver defaults --api-audiences.
	APIAudiences []string
	// Lookup returns the UID of the service account namespace/name, or an error
	// wrapping ErrServiceAccountNotFound when it does not exist. Kubernetes also
	// counts an account whose deletion started more than Leeway ago as gone. Other
	// errors reject the token too (a token cannot be trusted while its account
	// cannot be checked). Required; it must be safe for concurrent use.
	Lookup func(ctx context.Context, namespace, name string) (uid string, err error)
	// LookupBoundObject, if not nil, returns the UID of the object a token is bound
	// to (kind KindPod or KindSecret in namespace, or KindNode with namespace ""), or
	// an error wrapping ErrBoundObjectNotFound. A token whose bound object is gone or
	// has another UID is then rejected, as Kubernetes does. Nil checks service
	// accounts only: a bound token then lives as long as its account, to its expiry.
	LookupBoundObject func(ctx context.Context, kind, namespace, name string) (uid string, err error)
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// verificationKey is a key of AuthenticatorConfig.Keys with its algorithm.
type verificationKey struct {
	alg string
	key crypto.PublicKey
}

// Authenticator authenticates service account tokens: it is the authenticator.Token of
// an API server's chain for them. It is immutable, so safe for concurrent use (as long
// as the lookups are).
type Authenticator struct {
	issuers      map[string]bool
	keys         []verificationKey
	keysByID     map[string][]verificationKey
	algs         []string
	apiAudiences authenticator.Audiences
	lookup       func(ctx context.Context, namespace, name string) (string, error)
	lookupBound  func(ctx context.Context, kind, namespace, name string) (string, error)
	validator    *jwt.Validator
}

var _ authenticator.Token = (*Authenticator)(nil)

// NewAuthenticator returns the Authenticator of cfg. It fails with ErrInvalidConfig if
// cfg has no issuer (or an empty one), no key or no Lookup, and ErrUnsupportedKey if a
// key is not an RSA or ECDSA key on P-256, P-384 or P-521. cfg's slices are copied.
func NewAuthenticator(cfg AuthenticatorConfig) (*Authenticator, error) {
	switch {
	case len(cfg.Issuers) == 0 || slices.Contains(cfg.Issuers, ""):
		return nil, fmt.Errorf("%w: at least one issuer is required, and none may be empty", ErrInvalidConfig)
	case len(cfg.Keys) == 0:
		return nil, fmt.Errorf("%w: at least one verification key is required", ErrInvalidConfig)
	case cfg.Lookup == nil:
		return nil, fmt.Errorf("%w: a service account Lookup is required", ErrInvalidConfig)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	a := &Authenticator{
		issuers:      make(map[string]bool, len(cfg.Issuers)),
		keysByID:     make(map[string][]verificationKey, len(cfg.Keys)),
		apiAudiences: authenticator.Audiences(slices.Clone(cfg.APIAudiences)),
		lookup:       cfg.Lookup,
		lookupBound:  cfg.LookupBoundObject,
		validator:    jwt.NewValidator(jwt.WithLeeway(Leeway), jwt.WithTimeFunc(now), jwt.WithExpirationRequired(), jwt.WithIssuedAt()),
	}
	for _, iss := range cfg.Issuers {
		a.issuers[iss] = true
	}
	if len(a.apiAudiences) == 0 {
		a.apiAudiences = authenticator.Audiences(slices.Clone(cfg.Issuers))
	}
	for i, key := range cfg.Keys {
		alg, err := Algorithm(key)
		if err != nil {
			return nil, fmt.Errorf("verification key %d: %w", i, err)
		}
		kid, err := KeyID(key)
		if err != nil {
			return nil, fmt.Errorf("verification key %d: %w", i, err)
		}
		k := verificationKey{alg: alg, key: publicOf(key)}
		a.keys = append(a.keys, k)
		a.keysByID[kid] = append(a.keysByID[kid], k)
		if !slices.Contains(a.algs, alg) {
			a.algs = append(a.algs, alg)
		}
	}
	return a, nil
}

// AuthenticateToken authenticates a service account token.
//
// A token that is not a JWT, or whose "iss" is none of the Issuers, is not a service
// account token of this server: the answer is (nil, false, nil), and the chain's next
// token authenticator may try it. A JWT of one of the Issuers is then checked as
// Kubernetes does, and a failure is (nil, false, err), err wrapping ErrInvalidToken
// (signature, key, claims), ErrWrongAudience (no audience of the token is one of the
// request's: authenticator.AudiencesFrom(ctx), else the APIAudiences; a token without
// audiences counts as one for the APIAudiences), ErrExpired or ErrNotYetValid (beyond
// Leeway), the Lookup's error (ErrServiceAccountNotFound), ErrServiceAccountUIDMismatch
// or ErrBoundObjectInvalid.
//
// The user of an accepted token is Kubernetes': system:serviceaccount:<ns>:<name>,
// the account's UID, the groups system:serviceaccounts and
// system:serviceaccounts:<ns>, and the extras authentication.kubernetes.io/credential-id
// ("JTI=<jti>"), and for a token bound to a pod or a node, the pod-name and pod-uid,
// node-name and node-uid extras. The response's Audiences are the token's audiences
// the request is for.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	if !a.isOurs(token) {
		return nil, false, nil
	}
	c, err := a.verify(token)
	if err != nil {
		return a.reject(ctx, err)
	}
	auds, err := a.audiences(ctx, c)
	if err != nil {
		return a.reject(ctx, err)
	}
	if err := a.validateTimes(c); err != nil {
		return a.reject(ctx, err)
	}
	if err := a.checkServiceAccount(ctx, c.Kubernetes); err != nil {
		return a.reject(ctx, err)
	}
	if err := a.checkBoundObjects(ctx, c.Kubernetes); err != nil {
		return a.reject(ctx, err)
	}
	return &authenticator.Response{User: userInfo(c).UserInfo(), Audiences: auds}, true, nil
}

// reject logs why a token of one of the issuers was rejected (the reason never quotes
// the token) and returns the answer of AuthenticateToken.
func (a *Authenticator) reject(ctx context.Context, err error) (*authenticator.Response, bool, error) {
	klog.FromContext(ctx).V(4).Info("Rejected a service account token", "reason", err.Error())
	return nil, false, err
}

// isOurs reports whether token is a compact JWS (three base64url segments, header and
// payload JSON objects) whose payload's "iss", unverified yet, is one of the issuers.
func (a *Authenticator) isOurs(token string) bool {
	header, payload, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	payload, signature, ok := strings.Cut(payload, ".")
	if !ok || strings.Contains(signature, ".") {
		return false
	}
	var h map[string]any
	if !decodeSegment(header, &h) || h == nil {
		return false
	}
	var p struct {
		Issuer string `json:"iss"`
	}
	if !decodeSegment(payload, &p) {
		return false
	}
	if _, err := base64.RawURLEncoding.DecodeString(signature); err != nil {
		return false
	}
	return a.issuers[p.Issuer]
}

// decodeSegment decodes a base64url JSON segment of a JWS into v.
func decodeSegment(segment string, v any) bool {
	b, err := base64.RawURLEncoding.DecodeString(segment)
	return err == nil && json.Unmarshal(b, v) == nil
}

// verify checks the token's signature and returns its claims, checking that they are
// a service account's.
func (a *Authenticator) verify(token string) (*claims, error) {
	c := &claims{}
	// Claims are validated afterwards, in Kubernetes' order (audiences first).
	p := jwt.NewParser(jwt.WithValidMethods(a.algs), jwt.WithoutClaimsValidation())
	if _, err := p.ParseWithClaims(token, c, a.keyFunc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	if !a.issuers[c.Issuer] {
		return nil, fmt.Errorf("%w: issuer %q is not accepted", ErrInvalidToken, c.Issuer)
	}
	k := c.Kubernetes
	if k == nil || k.Namespace == "" || k.ServiceAccount.Name == "" {
		return nil, fmt.Errorf("%w: no service account in the %q claim", ErrInvalidToken, "kubernetes.io")
	}
	if c.Subject != apiserverserviceaccount.MakeUsername(k.Namespace, k.ServiceAccount.Name) {
		return nil, fmt.Errorf("%w: subject %q is not service account %s/%s", ErrInvalidToken, c.Subject, k.Namespace, k.ServiceAccount.Name)
	}
	return c, nil
}

// keyFunc returns the keys that may have signed t: those of its algorithm, and of its
// key ID if it has one.
func (a *Authenticator) keyFunc(t *jwt.Token) (any, error) {
	candidates := a.keys
	if v, ok := t.Header["kid"]; ok {
		kid, ok := v.(string)
		if !ok {
			return nil, errors.New("the key ID is not a string")
		}
		if candidates, ok = a.keysByID[kid]; !ok {
			return nil, fmt.Errorf("no key has key ID %q", kid)
		}
	}
	alg := t.Method.Alg()
	var set jwt.VerificationKeySet
	for _, k := range candidates {
		if k.alg == alg {
			set.Keys = append(set.Keys, k.key)
		}
	}
	if len(set.Keys) == 0 {
		return nil, fmt.Errorf("no %s key", alg)
	}
	return set, nil
}

// audiences returns the audiences of c that the request is for, none being
// ErrWrongAudience.
func (a *Authenticator) audiences(ctx context.Context, c *claims) (authenticator.Audiences, error) {
	tokenAuds := authenticator.Audiences(c.Audience)
	if len(tokenAuds) == 0 {
		// A token without audiences (a legacy one) is for the API server.
		tokenAuds = a.apiAudiences
	}
	requested, ok := authenticator.AudiencesFrom(ctx)
	if !ok {
		requested = a.apiAudiences
	}
	auds := tokenAuds.Intersect(requested)
	if len(auds) == 0 {
		return nil, fmt.Errorf("%w: the token is for %q, the request for %q", ErrWrongAudience, []string(tokenAuds), []string(requested))
	}
	return auds, nil
}

// validateTimes checks c's exp (required), nbf and iat against the clock, with Leeway.
func (a *Authenticator) validateTimes(c *claims) error {
	err := a.validator.Validate(c)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jwt.ErrTokenExpired):
		return fmt.Errorf("%w (at %s)", ErrExpired, c.ExpiresAt.UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return fmt.Errorf("%w: %w", ErrNotYetValid, err)
	default:
		return fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
}

// checkServiceAccount checks that the token's service account exists with its UID.
func (a *Authenticator) checkServiceAccount(ctx context.Context, k *kubernetesClaim) error {
	uid, err := a.lookup(ctx, k.Namespace, k.ServiceAccount.Name)
	if err != nil {
		return fmt.Errorf("service account %s/%s: %w", k.Namespace, k.ServiceAccount.Name, err)
	}
	if uid != k.ServiceAccount.UID {
		return fmt.Errorf("%w: service account %s/%s has UID %q, the token %q",
			ErrServiceAccountUIDMismatch, k.Namespace, k.ServiceAccount.Name, uid, k.ServiceAccount.UID)
	}
	return nil
}

// checkBoundObjects checks, if there is a LookupBoundObject, that the objects the token
// is bound to exist with their UIDs: its secret, its pod, or its node (the node of a
// pod-bound token is information only, as in Kubernetes).
func (a *Authenticator) checkBoundObjects(ctx context.Context, k *kubernetesClaim) error {
	if a.lookupBound == nil {
		return nil
	}
	type bound struct {
		kind, namespace string
		ref             *objectRef
	}
	objects := []bound{{KindSecret, k.Namespace, k.Secret}, {KindPod, k.Namespace, k.Pod}}
	if k.Pod == nil {
		objects = append(objects, bound{KindNode, "", k.Node})
	}
	for _, o := range objects {
		if o.ref == nil {
			continue
		}
		uid, err := a.lookupBound(ctx, o.kind, o.namespace, o.ref.Name)
		if err != nil {
			return fmt.Errorf("%w: bound %s %q: %w", ErrBoundObjectInvalid, o.kind, o.ref.Name, err)
		}
		if uid != o.ref.UID {
			return fmt.Errorf("%w: bound %s %q has UID %q, the token %q", ErrBoundObjectInvalid, o.kind, o.ref.Name, uid, o.ref.UID)
		}
	}
	return nil
}

// userInfo returns the service account information of an accepted token's claims.
func userInfo(c *claims) *apiserverserviceaccount.ServiceAccountInfo {
	k := c.Kubernetes
	info := &apiserverserviceaccount.ServiceAccountInfo{
		Namespace:    k.Namespace,
		Name:         k.ServiceAccount.Name,
		UID:          k.ServiceAccount.UID,
		CredentialID: tokenjwt.CredentialIDForJTI(c.ID),
	}
	if k.Pod != nil {
		info.PodName, info.PodUID = k.Pod.Name, k.Pod.UID
	}
	if k.Node != nil {
		info.NodeName, info.NodeUID = k.Node.Name, k.Node.UID
	}
	return info
}
