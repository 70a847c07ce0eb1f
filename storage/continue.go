package storage

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// continueToken is the opaque state behind a list's metadata.continue. Its JSON shape
// matches Kubernetes' so tokens look familiar when decoded by hand.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	// StartKey is relative to the listed prefix, so a token cannot escape it.
	StartKey string `json:"start"`
}

const continueTokenVersion = "meta.k8s.io/v1"

// EncodeContinue returns the token that resumes a list of prefix at revision rev from
// key next (the key after the last one returned, relative to the store). A revision of
// -1 means "continue at the current revision" (an inconsistent continuation, as after
// compaction).
func EncodeContinue(prefix, next string, rev int64) (string, error) {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if !strings.HasPrefix(next, prefix) {
		return "", fmt.Errorf("%w: key %q is not under %q", ErrInvalidContinue, next, prefix)
	}
	b, err := json.Marshal(continueToken{APIVersion: continueTokenVersion, ResourceVersion: rev, StartKey: strings.TrimPrefix(next, prefix)})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodeContinue parses a token made by EncodeContinue for the same prefix and returns
// the start key (relative to the store) and the revision (-1: current).
func DecodeContinue(prefix, token string) (start string, rev int64, err error) {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %w", ErrInvalidContinue, err)
	}
	var t continueToken
	if err := json.Unmarshal(b, &t); err != nil {
		return "", 0, fmt.Errorf("%w: %w", ErrInvalidContinue, err)
	}
	if t.APIVersion != continueTokenVersion {
		return "", 0, fmt.Errorf("%w: unsupported version %q", ErrInvalidContinue, t.APIVersion)
	}
	if t.ResourceVersion == 0 || t.ResourceVersion < -1 {
		return "", 0, fmt.Errorf("%w: bad resource version %d", ErrInvalidContinue, t.ResourceVersion)
	}
	if strings.Contains(t.StartKey, "..") || strings.HasPrefix(t.StartKey, "/") {
		return "", 0, fmt.Errorf("%w: bad start key", ErrInvalidContinue)
	}
	return prefix + t.StartKey, t.ResourceVersion, nil
}
