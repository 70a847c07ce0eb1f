package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
)

func TestTokenAuthenticator(t *testing.T) {
	fileTokens := map[string]User{
		"alice-token": {Name: "alice", UID: "1", Groups: []string{"dev"}},
		"bob-token":   {Name: "bob", Groups: []string{GroupAuthenticated}},
	}
	a, err := NewTokenAuthenticator(fileTokens, "admin-token", "loopback-token")
	if err != nil {
		t.Fatal(err)
	}
	fileTokens["alice-token"].Groups[0] = "changed" // the authenticator holds its own copy

	tests := []struct {
		header string
		want   User
		ok     bool
	}{
		{"Bearer alice-token", User{Name: "alice", UID: "1", Groups: []string{"dev", GroupAuthenticated}}, true},
		{"bearer   bob-token ", User{Name: "bob", Groups: []string{GroupAuthenticated}}, true},
		{"Bearer admin-token", User{Name: AdminUser, Groups: []string{GroupMasters, GroupAuthenticated}}, true},
		{"BEARER loopback-token", User{Name: LoopbackUser, Groups: []string{GroupMasters, GroupAuthenticated}}, true},
		{"", User{}, false},
		{"Bearer", User{}, false},
		{"Bearer ", User{}, false},
		{"Bearer wrong", User{}, false},
		{"Basic YWxpY2U6cHc=", User{}, false},
		{"alice-token", User{}, false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		got, ok := a.AuthenticateRequest(r)
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %+v, %v; want %+v, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

func TestTokenAuthenticatorConcurrentUse(t *testing.T) {
	a, err := NewTokenAuthenticator(nil, "admin-token", NewLoopbackToken())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				r.Header.Set("Authorization", "Bearer admin-token")
				if u, ok := a.AuthenticateRequest(r); !ok || !u.IsMaster() {
					t.Errorf("got %+v, %v", u, ok)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestNewTokenAuthenticatorErrors(t *testing.T) {
	tests := []struct {
		name            string
		file            map[string]User
		admin, loopback string
		dup             bool
	}{
		{name: "file token equals admin token", file: map[string]User{"same": {Name: "alice"}}, admin: "same", loopback: "lb", dup: true},
		{name: "admin equals loopback", admin: "same", loopback: "same", dup: true},
		{name: "empty file token", file: map[string]User{"": {Name: "alice"}}, admin: "a", loopback: "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewTokenAuthenticator(tt.file, tt.admin, tt.loopback)
			if err == nil {
				t.Fatal("want an error")
			}
			if errors.Is(err, ErrDuplicateToken) != tt.dup {
				t.Errorf("error %q: wraps ErrDuplicateToken = %v, want %v", err, !tt.dup, tt.dup)
			}
		})
	}
}

func TestNewLoopbackToken(t *testing.T) {
	a, b := NewLoopbackToken(), NewLoopbackToken()
	if a == b || len(a) != 43 {
		t.Errorf("tokens %q and %q: want two different 43-character tokens", a, b)
	}
}
