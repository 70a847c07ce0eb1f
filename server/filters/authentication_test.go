package filters_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/server/filters"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// whoami is what whoamiHandler answers: the user in the request context and the
// Authorization header it still sees.
type whoami struct {
	User          auth.User
	Authorization string
}

func whoamiHandler(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := auth.UserFrom(r.Context())
		if !ok {
			t.Errorf("%s: no user in the request context", r.URL.Path)
		}
		_ = json.NewEncoder(w).Encode(whoami{User: u, Authorization: r.Header.Get("Authorization")})
	})
}

func TestAuthentication(t *testing.T) {
	a, err := auth.NewTokenAuthenticator(map[string]auth.User{"alice-token": {Name: "alice"}}, "admin-token", "")
	if err != nil {
		t.Fatal(err)
	}
	public := func(path string) bool { return path == "/healthz" || path == "/version" }
	srv := httptest.NewServer(filters.Build(whoamiHandler(t), []filters.Filter{filters.Authentication(a, public, nil)}))
	t.Cleanup(srv.Close)

	for _, tt := range []struct {
		name, path, token string
		wantCode          int
		wantUser          auth.User
	}{
		{"token user", "/api/v1/pods", "alice-token", 200, auth.User{Name: "alice", Groups: []string{auth.GroupAuthenticated}}},
		{"admin on public path", "/healthz", "admin-token", 200, auth.User{Name: auth.AdminUser, Groups: []string{auth.GroupMasters, auth.GroupAuthenticated}}},
		{"anonymous on public path", "/version", "", 200, auth.Anonymous()},
		{"bad token on public path", "/healthz", "nope", 200, auth.Anonymous()},
		{"anonymous", "/api/v1/pods", "", 401, auth.User{}},
		{"bad token", "/api/v1/pods", "nope", 401, auth.User{}},
	} {
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
			if tt.wantUser.Name != auth.AnonymousUser && got.Authorization != "" {
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
