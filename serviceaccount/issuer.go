package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"fmt"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	apiserverserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
)

// The kinds of object a token can be bound to (BoundObject.Kind).
const (
	KindPod    = "Pod"
	KindSecret = "Secret"
	KindNode   = "Node"
)

// MaxExpirationSeconds is the longest lifetime a token can be issued for: 2^32 seconds,
// the bound the TokenRequest API's validation puts on spec.expirationSeconds.
const MaxExpirationSeconds = 1 << 32

// BoundObject is the object a token is bound to: the token is valid only as long as the
// object exists (see AuthenticatorConfig.LookupBoundObject).
type BoundObject struct {
	// Kind is KindPod, KindSecret or KindNode. Pods and secrets are in the service
	// account's namespace.
	Kind string
	// Name and UID identify the object; both are required.
	Name string
	UID  string
	// NodeName and NodeUID are, for a pod only, the node it is scheduled to, which
	// Kubernetes records in pod-bound tokens: NodeName is empty for a pod not
	// scheduled yet, NodeUID when the Node object does not exist.
	NodeName string
	NodeUID  string
}

// Request is what Issue puts in a token.
type Request struct {
	// Namespace, Name and UID identify the service account; all are required.
	Namespace string
	Name      string
	UID       string
	// Audiences are the token's audiences ("aud"), at least one. (The TokenRequest
	// API defaults them to the server's API audiences before issuing.)
	Audiences []string
	// ExpirationSeconds is the token's lifetime, from 1 to MaxExpirationSeconds. The
	// API's minimum (10 minutes) and the server's maximum are the caller's to apply.
	ExpirationSeconds int64
	// Now is the issuing time ("iat" and "nbf"); zero means time.Now(). Token times
	// have a precision of one second: Now is truncated.
	Now time.Time
	// BoundObject, if not nil, binds the token to a pod, a secret or a node.
	BoundObject *BoundObject
}

// Issuer signs service account tokens with one private key. It is immutable, so safe
// for concurrent use.
type Issuer struct {
	issuer string
	key    crypto.Signer
	method jwt.SigningMethod
	keyID  string
}

// NewIssuer returns an Issuer of tokens whose "iss" is issuer, signed with key: an
// *ecdsa.PrivateKey (ES256 on P-256, ES384 on P-384, ES512 on P-521) or an
// *rsa.PrivateKey (RS256), as ParsePrivateKey returns them. It fails with
// ErrInvalidConfig if issuer is empty and ErrUnsupportedKey for other keys.
func NewIssuer(issuer string, key crypto.Signer) (*Issuer, error) {
	if issuer == "" {
		return nil, fmt.Errorf("%w: empty issuer", ErrInvalidConfig)
	}
	switch key.(type) {
	case *ecdsa.PrivateKey, *rsa.PrivateKey:
	default:
		return nil, fmt.Errorf("%w: cannot sign with %T (want *ecdsa.PrivateKey or *rsa.PrivateKey)", ErrUnsupportedKey, key)
	}
	alg, err := Algorithm(key.Public())
	if err != nil {
		return nil, err
	}
	keyID, err := KeyID(key.Public())
	if err != nil {
		return nil, err
	}
	return &Issuer{issuer: issuer, key: key, method: jwt.GetSigningMethod(alg), keyID: keyID}, nil
}

// KeyID returns the key ID of the Issuer's key, the "kid" of its tokens' header.
func (i *Issuer) KeyID() string { return i.keyID }

// PublicKey returns the public key of the Issuer's key, to verify its tokens with and
// to publish in the JWKS.
func (i *Issuer) PublicKey() crypto.PublicKey { return i.key.Public() }

// Issue returns a new signed token for r and the time it expires. The header is
// {"alg", "kid"}; the claims are Kubernetes': iss, sub (the service account's user
// name), aud, exp, nbf and iat, jti (a random UUID), and "kubernetes.io" with the
// namespace, the service account and the bound object. It fails with
// ErrInvalidRequest if r lacks something.
func (i *Issuer) Issue(r Request) (token string, expiresAt time.Time, err error) {
	if err := r.validate(); err != nil {
		return "", time.Time{}, err
	}
	now := r.Now
	if now.IsZero() {
		now = time.Now()
	}
	jti, err := uuid.NewRandom()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("generating the token's ID: %w", err)
	}
	issued := jwt.NewNumericDate(now)
	expires := jwt.NewNumericDate(issued.Add(time.Duration(r.ExpirationSeconds) * time.Second))
	c := &claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    i.issuer,
			Subject:   apiserverserviceaccount.MakeUsername(r.Namespace, r.Name),
			Audience:  jwt.ClaimStrings(slices.Clone(r.Audiences)),
			ExpiresAt: expires,
			NotBefore: issued,
			IssuedAt:  issued,
			ID:        jti.String(),
		},
		Kubernetes: r.kubernetesClaim(),
	}
	t := jwt.NewWithClaims(i.method, c)
	// Kubernetes' header names the algorithm and the key only (no "typ").
	t.Header = map[string]any{"alg": i.method.Alg(), "kid": i.keyID}
	token, err = t.SignedString(i.key)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("signing a token for service account %s/%s: %w", r.Namespace, r.Name, err)
	}
	return token, expires.Time, nil
}

// validate checks that r has all Issue needs.
func (r *Request) validate() error {
	switch {
	case r.Namespace == "" || r.Name == "" || r.UID == "":
		return fmt.Errorf("%w: the service account's namespace, name and UID are required", ErrInvalidRequest)
	case len(r.Audiences) == 0 || slices.Contains(r.Audiences, ""):
		return fmt.Errorf("%w: at least one audience is required, and none may be empty", ErrInvalidRequest)
	case r.ExpirationSeconds <= 0 || r.ExpirationSeconds > MaxExpirationSeconds:
		return fmt.Errorf("%w: expirationSeconds %d is not between 1 and %d", ErrInvalidRequest, r.ExpirationSeconds, int64(MaxExpirationSeconds))
	}
	b := r.BoundObject
	if b == nil {
		return nil
	}
	switch {
	case b.Kind != KindPod && b.Kind != KindSecret && b.Kind != KindNode:
		return fmt.Errorf("%w: cannot bind a token to a %q (want %s, %s or %s)", ErrInvalidRequest, b.Kind, KindPod, KindSecret, KindNode)
	case b.Name == "" || b.UID == "":
		return fmt.Errorf("%w: the bound %s's name and UID are required", ErrInvalidRequest, b.Kind)
	case b.Kind != KindPod && (b.NodeName != "" || b.NodeUID != ""):
		return fmt.Errorf("%w: only a pod-bound token names a node besides", ErrInvalidRequest)
	case b.NodeName == "" && b.NodeUID != "":
		return fmt.Errorf("%w: the pod's node has a UID but no name", ErrInvalidRequest)
	}
	return nil
}

// kubernetesClaim returns the "kubernetes.io" claim of r (which is valid).
func (r *Request) kubernetesClaim() *kubernetesClaim {
	k := &kubernetesClaim{
		Namespace:      r.Namespace,
		ServiceAccount: objectRef{Name: r.Name, UID: r.UID},
	}
	b := r.BoundObject
	if b == nil {
		return k
	}
	ref := &objectRef{Name: b.Name, UID: b.UID}
	switch b.Kind {
	case KindPod:
		k.Pod = ref
		if b.NodeName != "" {
			k.Node = &objectRef{Name: b.NodeName, UID: b.NodeUID}
		}
	case KindSecret:
		k.Secret = ref
	case KindNode:
		k.Node = ref
	}
	return k
}
