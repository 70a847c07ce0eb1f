package auth

import (
	"encoding/json"
	"net/http"
	"testing"
)

// whoami answers with the user found in the request context and the Authorization header
// it still sees.
type whoami struct {
	User          User
	Authorization string
}

func whoamiHandler(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := UserFrom(r.Context())
		if !ok {
			t.Errorf("%s: no user in the request context", r.URL.Path)
		}
		_ = json.NewEncoder(w).Encode(whoami{User: u, Authorization: r.Header.Get("Authorization")})
	})
}

// authenticated answers whoami for requests a authenticates, 401 for the others.
func authenticated(t *testing.T, a *TokenAuthenticator) http.Handler {
	next := whoamiHandler(t)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := a.AuthenticateRequest(r)
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithUser(r.Context(), u)))
	})
}

func TestUserFromEmptyContext(t *testing.T) {
	if u, ok := UserFrom(t.Context()); ok {
		t.Errorf("got %+v from a context without a user", u)
	}
	u := User{Name: "alice"}
	if got, ok := UserFrom(WithUser(t.Context(), u)); !ok || got.Name != "alice" {
		t.Errorf("got %+v, %v", got, ok)
	}
}
