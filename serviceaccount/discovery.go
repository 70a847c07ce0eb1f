package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"slices"
)

// The paths at which kube-apiserver serves the OIDC discovery documents of its
// service account issuer, which relying parties outside the cluster fetch to verify
// tokens. Kubernetes serves both with "Cache-Control: public, max-age=3600".
const (
	OpenIDConfigPath = "/.well-known/openid-configuration"
	JWKSPath         = "/openid/v1/jwks"
)

// openIDConfiguration is the OIDC provider metadata kube-apiserver serves: the
// subset relying parties need to verify ID tokens.
type openIDConfiguration struct {
	Issuer        string   `json:"issuer"`
	JWKSURI       string   `json:"jwks_uri"`
	ResponseTypes []string `json:"response_types_supported"`
	SubjectTypes  []string `json:"subject_types_supported"`
	SigningAlgs   []string `json:"id_token_signing_alg_values_supported"`
}

// OpenIDConfiguration returns the document served at OpenIDConfigPath: issuer,
// jwks_uri, response_types_supported ["id_token"], subject_types_supported ["public"]
// and id_token_signing_alg_values_supported, the algorithms of keys (sorted, each
// once). As kube-apiserver, it requires an https issuer URL without query or fragment
// and an https jwksURI (ErrInvalidConfig); kube-apiserver then serves no discovery
// documents, and neither should the caller. keys are those JWKS is given.
func OpenIDConfiguration(issuer, jwksURI string, keys []crypto.PublicKey) ([]byte, error) {
	if err := checkDiscoveryURLs(issuer, jwksURI); err != nil {
		return nil, err
	}
	jwks, err := publicJWKs(keys)
	if err != nil {
		return nil, err
	}
	var algs []string
	for _, k := range jwks {
		algs = append(algs, k.Alg)
	}
	slices.Sort(algs)
	doc := openIDConfiguration{
		Issuer:        issuer,
		JWKSURI:       jwksURI,
		ResponseTypes: []string{"id_token"}, // Kubernetes issues ID tokens only
		SubjectTypes:  []string{"public"},
		SigningAlgs:   slices.Compact(algs),
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding the OpenID configuration: %w", err)
	}
	return out, nil
}

// checkDiscoveryURLs checks the issuer and JWKS URLs as kube-apiserver does before it
// serves discovery documents.
func checkDiscoveryURLs(issuer, jwksURI string) error {
	iss, err := url.Parse(issuer)
	switch {
	case err != nil:
		return fmt.Errorf("%w: issuer URL: %w", ErrInvalidConfig, err)
	case iss.Scheme != "https" || iss.Host == "":
		return fmt.Errorf("%w: issuer URL %q is not an https URL", ErrInvalidConfig, issuer)
	case iss.RawQuery != "" || iss.Fragment != "":
		return fmt.Errorf("%w: issuer URL %q has a query or a fragment", ErrInvalidConfig, issuer)
	}
	jwks, err := url.Parse(jwksURI)
	switch {
	case err != nil:
		return fmt.Errorf("%w: JWKS URI: %w", ErrInvalidConfig, err)
	case jwks.Scheme != "https" || jwks.Host == "":
		return fmt.Errorf("%w: JWKS URI %q is not an https URL", ErrInvalidConfig, jwksURI)
	}
	return nil
}

// jwk is a public JSON Web Key (RFC 7517) as kube-apiserver writes them: an EC key
// has crv, x and y, an RSA key n and e.
type jwk struct {
	Use string `json:"use"`
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Crv string `json:"crv,omitempty"`
	Alg string `json:"alg"`
	X   string `json:"x,omitempty"`
	Y   string `json:"y,omitempty"`
	N   string `json:"n,omitempty"`
	E   string `json:"e,omitempty"`
}

// jwks is a JSON Web Key Set.
type jwks struct {
	Keys []jwk `json:"keys"`
}

// JWKS returns the document served at JWKSPath: the JSON Web Key Set of keys, the
// public keys tokens may be signed with, {"keys": [{"use": "sig", "kty", "kid", "alg",
// and crv, x, y or n, e}]}, in the order of keys, a key given twice once. Private keys
// stand for their public keys. It fails with ErrInvalidConfig if keys is empty and
// ErrUnsupportedKey for keys other than RSA and ECDSA on P-256, P-384 or P-521.
func JWKS(keys []crypto.PublicKey) ([]byte, error) {
	set, err := publicJWKs(keys)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(jwks{Keys: set})
	if err != nil {
		return nil, fmt.Errorf("encoding the JWKS: %w", err)
	}
	return out, nil
}

// publicJWKs returns the JWKs of keys, without duplicates.
func publicJWKs(keys []crypto.PublicKey) ([]jwk, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no keys to publish", ErrInvalidConfig)
	}
	var out []jwk
	for i, key := range keys {
		k, err := publicJWK(key)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i, err)
		}
		if !slices.ContainsFunc(out, func(o jwk) bool { return o.Kid == k.Kid }) {
			out = append(out, k)
		}
	}
	return out, nil
}

// publicJWK returns the JWK of key's public key.
func publicJWK(key crypto.PublicKey) (jwk, error) {
	key = publicOf(key)
	alg, err := Algorithm(key)
	if err != nil {
		return jwk{}, err
	}
	kid, err := KeyID(key)
	if err != nil {
		return jwk{}, err
	}
	k := jwk{Use: "sig", Kid: kid, Alg: alg}
	b64 := base64.RawURLEncoding.EncodeToString
	switch pub := key.(type) {
	case *rsa.PublicKey:
		k.Kty = "RSA"
		k.N = b64(pub.N.Bytes())
		k.E = b64(big.NewInt(int64(pub.E)).Bytes())
	case *ecdsa.PublicKey:
		// The uncompressed point 0x04 || X || Y, coordinates of the curve's full size,
		// as RFC 7518 requires of "x" and "y".
		point, err := pub.Bytes()
		if err != nil {
			return jwk{}, fmt.Errorf("%w: %w", ErrUnsupportedKey, err)
		}
		size := (len(point) - 1) / 2
		k.Kty = "EC"
		k.Crv = pub.Curve.Params().Name
		k.X = b64(point[1 : 1+size])
		k.Y = b64(point[1+size:])
	}
	return k, nil
}
