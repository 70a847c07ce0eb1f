package serviceaccount

import "errors"

// Errors of keys.
var (
	// ErrNoPrivateKey means PEM data holds no private key block.
	ErrNoPrivateKey = errors.New("no private key in PEM data")
	// ErrInvalidKey means a private key block could not be decoded.
	ErrInvalidKey = errors.New("invalid private key")
	// ErrUnsupportedKey means a key is neither RSA nor ECDSA on P-256, P-384 or P-521
	// (or, to sign, not an *rsa.PrivateKey or *ecdsa.PrivateKey).
	ErrUnsupportedKey = errors.New("unsupported key")
)

// Errors of issuing and of configuration.
var (
	// ErrInvalidRequest means an issuing Request lacks something or is inconsistent.
	ErrInvalidRequest = errors.New("invalid service account token request")
	// ErrInvalidConfig means an Issuer, Authenticator or discovery document cannot be
	// built from what it was given.
	ErrInvalidConfig = errors.New("invalid service account token configuration")
)

// Errors of authentication. AuthenticateToken returns them (wrapped, with the reason)
// for tokens of one of its issuers that it rejects; none of them quotes the token.
var (
	// ErrInvalidToken means the token's signature does not verify with any key of the
	// Authenticator (tampered, or signed with another key), or its claims are not
	// those of a service account token.
	ErrInvalidToken = errors.New("invalid service account token")
	// ErrExpired means the token expired (more than the clock-skew leeway ago).
	ErrExpired = errors.New("service account token has expired")
	// ErrNotYetValid means the token's not-before or issued-at time is ahead of the
	// clock by more than the leeway.
	ErrNotYetValid = errors.New("service account token is not valid yet")
	// ErrWrongAudience means none of the token's audiences is one the request is for.
	ErrWrongAudience = errors.New("service account token audiences are invalid")
	// ErrServiceAccountNotFound means the token's service account does not exist (any
	// more). AuthenticatorConfig.Lookup returns errors wrapping it.
	ErrServiceAccountNotFound = errors.New("service account not found")
	// ErrServiceAccountUIDMismatch means the token's service account was deleted and
	// created again: its UID is not the token's.
	ErrServiceAccountUIDMismatch = errors.New("service account UID does not match the token's")
	// ErrBoundObjectInvalid means the pod, secret or node the token is bound to no
	// longer exists, or is another object of the same name (UID differs).
	ErrBoundObjectInvalid = errors.New("service account token has been invalidated")
	// ErrBoundObjectNotFound is what AuthenticatorConfig.LookupBoundObject returns
	// (wrapped) when the object does not exist.
	ErrBoundObjectNotFound = errors.New("bound object not found")
)
