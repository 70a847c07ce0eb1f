package wire

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Plaintext is the key identity of values stored as they are (the identity provider,
// or no encryption configured): a server that reports no key writes plaintext.
const Plaintext = "identity"

// AnnotationEncryptionKeys is the StorageVersion annotation in which each server
// reports, next to its entry in status.storageVersions, the encryption keys of the
// resource: a JSON object from apiServerID to EncryptionKeys. A server without an
// encryption key for the resource (plaintext) has no member. The servers write it
// with their entry, in the same status write; members of servers without an entry
// mean nothing and are dropped.
const AnnotationEncryptionKeys = "encryption.concord.io/keys"

// AnnotationCommonWriteKey is the StorageVersion annotation holding the write key
// every server with an entry reports (Plaintext included), like
// status.commonEncodingVersion; it is absent while they disagree or there is no
// entry.
const AnnotationCommonWriteKey = "encryption.concord.io/common-write-key"

// EncryptionKeys is what one server reports of a resource's encryption at rest. A key
// identity is "<provider>:<key name>:<fingerprint>" for aescbc, aesgcm and secretbox
// (the fingerprint distinguishes two keys of one name), "kms:<provider name>" for a
// KMS plugin, and Plaintext.
type EncryptionKeys struct {
	// Write seals every value the server writes.
	Write string `json:"write"`
	// Read are the keys it can open, the write key first.
	Read []string `json:"read,omitempty"`
}

// ParseEncryptionKeys reads the value of AnnotationEncryptionKeys ("" means none).
func ParseEncryptionKeys(s string) (map[string]EncryptionKeys, error) {
	out := map[string]EncryptionKeys{}
	if s == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationEncryptionKeys, err)
	}
	return out, nil
}

// FormatEncryptionKeys is the value of AnnotationEncryptionKeys for keys ("" when
// empty). The encoding is deterministic.
func FormatEncryptionKeys(keys map[string]EncryptionKeys) string {
	if len(keys) == 0 {
		return ""
	}
	b, _ := json.Marshal(keys) // maps marshal with sorted keys
	return string(b)
}

// WriteKeyOf returns the write key server id reports in keys: Plaintext when it
// reports none.
func WriteKeyOf(keys map[string]EncryptionKeys, id string) string {
	if k, ok := keys[id]; ok && k.Write != "" {
		return k.Write
	}
	return Plaintext
}

// storageHashSeparator joins a storage version hash and a key identity; base64 and key
// identities never contain it.
const storageHashSeparator = "@"

// StorageHash is what a storage migration brings a resource's objects to: the storage
// version hash alone for plaintext, else "<hash>@<write key identity>". A new write
// key is a storage change like a new version: the hash changes, and objects written
// before must be migrated. StorageStates record these.
func StorageHash(versionHash, writeKey string) string {
	if writeKey == "" || writeKey == Plaintext {
		return versionHash
	}
	return versionHash + storageHashSeparator + writeKey
}

// SplitStorageHash is the inverse of StorageHash: the version hash and the write key
// (Plaintext when there is none).
func SplitStorageHash(h string) (versionHash, writeKey string) {
	if v, k, ok := strings.Cut(h, storageHashSeparator); ok {
		return v, k
	}
	return h, Plaintext
}

// KeyName returns "<provider>:<key name>" of a key identity, the part an operator
// names a key by and that sealed values carry in etcd: "aescbc:key1" of
// "aescbc:key1:3f9a0c12". Other identities are their own name.
func KeyName(identity string) string {
	provider, rest, _ := strings.Cut(identity, ":")
	switch provider {
	case "aescbc", "aesgcm", "secretbox":
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			return provider + ":" + rest[:i]
		}
	}
	return identity
}
