package tokens

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/concordproject/concord/serviceaccount"
)

// testFeature is a Feature with an issuer of a fresh key and no store: enough for the
// discovery documents and the lookups that read nothing.
func testFeature(t *testing.T) *Feature {
	t.Helper()
	pemKey, err := serviceaccount.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, err := serviceaccount.ParsePrivateKey(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := serviceaccount.NewIssuer("https://concord.test", key)
	if err != nil {
		t.Fatal(err)
	}
	return &Feature{issuerURL: "https://concord.test", issuer: issuer}
}

func TestInstallDiscovery(t *testing.T) {
	mux := http.NewServeMux()
	if err := testFeature(t).InstallDiscovery(mux); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path, contentType string
		code                      int
	}{
		{http.MethodGet, serviceaccount.OpenIDConfigPath, "application/json", http.StatusOK},
		{http.MethodHead, serviceaccount.JWKSPath, "application/jwk-set+json", http.StatusOK},
		{http.MethodPost, serviceaccount.JWKSPath, "", http.StatusMethodNotAllowed},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.code || rec.Header().Get("Content-Type") != tc.contentType {
				t.Errorf("got %d %q, want %d %q", rec.Code, rec.Header().Get("Content-Type"), tc.code, tc.contentType)
			}
			if tc.code == http.StatusOK && rec.Header().Get("Cache-Control") != "public, max-age=3600" {
				t.Errorf("Cache-Control %q", rec.Header().Get("Cache-Control"))
			}
		})
	}
}

func TestBoundObjectOtherThanSecret(t *testing.T) {
	_, err := testFeature(t).boundObjectUID(t.Context(), serviceaccount.KindPod, "default", "p")
	if !errors.Is(err, serviceaccount.ErrBoundObjectNotFound) {
		t.Errorf("got %v, want ErrBoundObjectNotFound", err)
	}
}
