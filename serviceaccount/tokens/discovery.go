package tokens

import (
	"crypto"
	"net/http"

	"github.com/concordproject/concord/serviceaccount"
)

// InstallDiscovery serves the issuer's OpenID Connect discovery document and its
// public keys on mux, as kube-apiserver does, behind the server's handler chain
// (RBAC's system:service-account-issuer-discovery role grants them). The server calls
// it once its handler exists.
func (f *Feature) InstallDiscovery(mux *http.ServeMux) error {
	keys := []crypto.PublicKey{f.issuer.PublicKey()}
	config, err := serviceaccount.OpenIDConfiguration(f.issuerURL, f.issuerURL+serviceaccount.JWKSPath, keys)
	if err != nil {
		return err
	}
	jwks, err := serviceaccount.JWKS(keys)
	if err != nil {
		return err
	}
	mux.Handle(serviceaccount.OpenIDConfigPath, serveDocument(config, "application/json"))
	mux.Handle(serviceaccount.JWKSPath, serveDocument(jwks, "application/jwk-set+json"))
	return nil
}

// serveDocument answers GET and HEAD with body, cacheable for an hour.
func serveDocument(body []byte, contentType string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "public, max-age=3600")
		_, _ = w.Write(body)
	}
}
