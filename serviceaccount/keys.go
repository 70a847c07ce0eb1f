package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
)

// The JWS algorithms of the keys Concord signs with, as Kubernetes chooses them: RSA
// keys sign with RS256, ECDSA keys with the algorithm of their curve.
const (
	AlgRS256 = "RS256"
	AlgES256 = "ES256"
	AlgES384 = "ES384"
	AlgES512 = "ES512"
)

// PEM block types ParsePrivateKey reads.
const (
	pemECPrivateKey    = "EC PRIVATE KEY"  // SEC 1
	pemRSAPrivateKey   = "RSA PRIVATE KEY" // PKCS #1
	pemPKCS8PrivateKey = "PRIVATE KEY"     // PKCS #8
)

// ParsePrivateKey returns the first private key of pemBytes: an ECDSA key (SEC 1 "EC
// PRIVATE KEY" or PKCS #8 "PRIVATE KEY") on P-256, P-384 or P-521, or an RSA key (PKCS
// #1 "RSA PRIVATE KEY" or PKCS #8). Other blocks, such as the "EC PARAMETERS" openssl
// writes before an EC key, or certificates, are skipped. It fails with ErrNoPrivateKey
// if there is no such block and ErrUnsupportedKey for other kinds of keys (Ed25519,
// other curves, encrypted keys). Errors never quote the key.
func ParsePrivateKey(pemBytes []byte) (crypto.Signer, error) {
	rest := pemBytes
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, ErrNoPrivateKey
		}
		var (
			key any
			err error
		)
		if _, encrypted := block.Headers["Proc-Type"]; encrypted && block.Type != "EC PARAMETERS" {
			return nil, fmt.Errorf("%w: encrypted private keys are not supported", ErrUnsupportedKey)
		}
		switch block.Type {
		case pemECPrivateKey:
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case pemRSAPrivateKey:
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case pemPKCS8PrivateKey:
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "ENCRYPTED PRIVATE KEY":
			return nil, fmt.Errorf("%w: encrypted private keys are not supported", ErrUnsupportedKey)
		default:
			continue
		}
		if err != nil {
			// x509's errors describe the encoding, never the key material.
			return nil, fmt.Errorf("%w: %q block: %w", ErrInvalidKey, block.Type, err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("%w: %T", ErrUnsupportedKey, key)
		}
		if _, err := Algorithm(signer.Public()); err != nil {
			return nil, err
		}
		return signer, nil
	}
}

// GenerateKey returns a new ECDSA P-256 private key (ES256) as a PKCS #8 "PRIVATE KEY"
// PEM block, which ParsePrivateKey reads.
func GenerateKey() ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating an ECDSA P-256 key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the key as PKCS #8: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPKCS8PrivateKey, Bytes: der}), nil
}

// KeyID returns the key ID Kubernetes gives a public key (the "kid" of a token's header
// and of the key's JWK): the unpadded base64url encoding of the SHA-256 digest of the
// key's PKIX (SubjectPublicKeyInfo) DER encoding. A private key (anything with a
// Public method) stands for its public key.
func KeyID(key crypto.PublicKey) (string, error) {
	key = publicOf(key)
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		return "", fmt.Errorf("%w: %T: %w", ErrUnsupportedKey, key, err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// Algorithm returns the JWS algorithm tokens signed with key use: AlgRS256 for an RSA
// key, AlgES256, AlgES384 or AlgES512 for an ECDSA key on P-256, P-384 or P-521. Other
// keys are ErrUnsupportedKey. A private key stands for its public key.
func Algorithm(key crypto.PublicKey) (string, error) {
	switch k := publicOf(key).(type) {
	case *rsa.PublicKey:
		return AlgRS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return AlgES256, nil
		case elliptic.P384():
			return AlgES384, nil
		case elliptic.P521():
			return AlgES512, nil
		}
		return "", fmt.Errorf("%w: ECDSA curve %s (want P-256, P-384 or P-521)", ErrUnsupportedKey, k.Curve.Params().Name)
	default:
		return "", fmt.Errorf("%w: %T (want an RSA or ECDSA key)", ErrUnsupportedKey, key)
	}
}

// publicOf returns the public key of a private key, and any other key as it is.
func publicOf(key crypto.PublicKey) crypto.PublicKey {
	if private, ok := key.(interface{ Public() crypto.PublicKey }); ok {
		return private.Public()
	}
	return key
}
