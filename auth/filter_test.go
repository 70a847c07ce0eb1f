package auth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

func TestWithAuthentication(t *testing.T) {
	a, err := NewTokenAuthenticator(map[string]User{"alice-token": {Name: "alice"}}, "admin-token", "")
	if err != nil {
		t.Fatal(err)
	}
	public := func(path string) bool { return path == "/healthz" || path == "/version" }
	srv := httptest.NewServer(WithAuthentication(whoamiHandler(t), a, public))
	t.Cleanup(srv.Close)

	tests := []struct {
		name, path, token string
		wantCode          int
		wantUser          User
	}{
		{"token user", "/api/v1/pods", "alice-token", 200, User{Name: "alice", Groups: []string{GroupAuthenticated}}},
		{"admin on public path", "/healthz", "admin-token", 200, User{Name: AdminUser, Groups: []string{GroupMasters, GroupAuthenticated}}},
		{"anonymous on public path", "/version", "", 200, User{Name: AnonymousUser, Groups: []string{GroupUnauthenticated}}},
		{"bad token on public path", "/healthz", "nope", 200, User{Name: AnonymousUser, Groups: []string{GroupUnauthenticated}}},
		{"anonymous", "/api/v1/pods", "", 401, User{}},
		{"bad token", "/api/v1/pods", "nope", 401, User{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("got %d %s, want %d", resp.StatusCode, body, tt.wantCode)
			}
			if tt.wantCode == http.StatusUnauthorized {
				checkUnauthorizedStatus(t, resp, body)
				return
			}
			var got whoami
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.User, tt.wantUser) {
				t.Errorf("got user %+v, want %+v", got.User, tt.wantUser)
			}
			if tt.wantUser.Name != AnonymousUser && got.Authorization != "" {
				t.Error("the Authorization header reached the handler")
			}
		})
	}
}

func checkUnauthorizedStatus(t *testing.T, resp *http.Response, body []byte) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var status metav1.Status
	if err := json.Unmarshal(body, &status); err != nil {
		t.Fatalf("body %s is not a Status: %v", body, err)
	}
	want := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Reason:   metav1.StatusReasonUnauthorized,
		Code:     http.StatusUnauthorized,
		Message:  "Unauthorized",
	}
	if !reflect.DeepEqual(status, want) {
		t.Errorf("got Status %+v, want %+v", status, want)
	}
	if strings.Contains(string(body), "nope") {
		t.Error("the 401 body echoes the token")
	}
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
