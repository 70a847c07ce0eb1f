package auth

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// TokenAuthenticator maps bearer tokens to users. It is immutable once built, so one value
// serves any number of concurrent requests without locking.
//
// Tokens are kept only as SHA-256 digests, and a request's token is found by hashing it
// and looking the digest up in a map. A map lookup is not constant time, but what its
// timing can reveal is how the digest of the presented token relates to stored digests,
// and steering a digest towards a stored one needs a SHA-256 preimage. This keeps each
// request at one hash and one lookup however many tokens there are, where comparing in
// constant time against every token would cost one comparison per token, and it keeps
// raw tokens out of the process's long-lived memory.
type TokenAuthenticator struct {
	users map[[sha256.Size]byte]User
}

// NewTokenAuthenticator builds an authenticator accepting fileTokens (as LoadTokenFile
// returns them), adminToken as AdminUser in GroupMasters, and loopbackToken as LoopbackUser
// in GroupMasters. An empty adminToken or loopbackToken is not accepted as anyone's token:
// it just adds no user. Every user also gets GroupAuthenticated.
//
// It fails if a token is empty or given to two users (wrapping ErrDuplicateToken). The
// caller's map and slices are copied, not retained.
func NewTokenAuthenticator(fileTokens map[string]User, adminToken, loopbackToken string) (*TokenAuthenticator, error) {
	a := &TokenAuthenticator{users: make(map[[sha256.Size]byte]User, len(fileTokens)+2)}
	add := func(token string, u User, what string) error {
		if token == "" {
			return fmt.Errorf("empty token for user %q", u.Name)
		}
		digest := sha256.Sum256([]byte(token))
		if other, ok := a.users[digest]; ok {
			return fmt.Errorf("%w: the %s token of user %q is also the token of user %q", ErrDuplicateToken, what, u.Name, other.Name)
		}
		groups := slices.Clone(u.Groups)
		if !slices.Contains(groups, GroupAuthenticated) {
			groups = append(groups, GroupAuthenticated)
		}
		u.Groups = slices.Clip(groups)
		a.users[digest] = u
		return nil
	}
	if adminToken != "" {
		if err := add(adminToken, User{Name: AdminUser, Groups: []string{GroupMasters}}, "admin"); err != nil {
			return nil, err
		}
	}
	if loopbackToken != "" {
		if err := add(loopbackToken, User{Name: LoopbackUser, Groups: []string{GroupMasters}}, "loopback"); err != nil {
			return nil, err
		}
	}
	for token, u := range fileTokens {
		if err := add(token, u, "file"); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// NewLoopbackToken returns a new random token (32 bytes, base64url) for a server's own
// clients. It lives only in the process: pass it to NewTokenAuthenticator and RESTConfig.
func NewLoopbackToken() string { return newToken() }

// AuthenticateRequest returns the user of the request's "Authorization: Bearer <token>"
// header, and false if there is no such header or the token is unknown. The scheme is
// matched case-insensitively. The returned User's Groups are shared: do not modify them.
func (a *TokenAuthenticator) AuthenticateRequest(r *http.Request) (User, bool) {
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return User{}, false
	}
	return a.authenticate(token)
}

// authenticate returns the user of token, and false if it is unknown.
func (a *TokenAuthenticator) authenticate(token string) (User, bool) {
	if a == nil {
		return User{}, false
	}
	u, ok := a.users[sha256.Sum256([]byte(token))]
	return u, ok
}

func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
