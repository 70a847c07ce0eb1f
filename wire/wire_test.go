package wire_test

import (
	"testing"

	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRewritePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		gr   schema.GroupResource
		ok   bool
	}{
		{"/concord/v1/rewrite/core/configmaps", schema.GroupResource{Resource: "configmaps"}, true},
		{"/concord/v1/rewrite/apps/deployments", schema.GroupResource{Group: "apps", Resource: "deployments"}, true},
		{"/concord/v1/rewrite/apps", schema.GroupResource{}, false},
		{"/concord/v1/rewrite/apps/deployments/x", schema.GroupResource{}, false},
		{"/concord/v1/rewrite//deployments", schema.GroupResource{}, false},
		{"/apis/apps/v1/deployments", schema.GroupResource{}, false},
	} {
		gr, ok := wire.ParseRewritePath(tc.path)
		if gr != tc.gr || ok != tc.ok {
			t.Errorf("ParseRewritePath(%q) = %v, %v; want %v, %v", tc.path, gr, ok, tc.gr, tc.ok)
		}
		if tc.ok && wire.RewriteURL(tc.gr) != tc.path {
			t.Errorf("RewriteURL(%v) = %q, want %q", tc.gr, wire.RewriteURL(tc.gr), tc.path)
		}
	}
}

func TestStorageVersionNames(t *testing.T) {
	for _, tc := range []struct {
		gr   schema.GroupResource
		name string
	}{
		{schema.GroupResource{Resource: "configmaps"}, "core.configmaps"},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, "apps.deployments"},
		{schema.GroupResource{Group: "stable.example.com", Resource: "widgets"}, "stable.example.com.widgets"},
	} {
		if got := wire.StorageVersionName(tc.gr); got != tc.name {
			t.Errorf("StorageVersionName(%v) = %q, want %q", tc.gr, got, tc.name)
		}
		if gr, ok := wire.ParseStorageVersionName(tc.name); !ok || gr != tc.gr {
			t.Errorf("ParseStorageVersionName(%q) = %v, %v", tc.name, gr, ok)
		}
	}
	for _, bad := range []string{"widgets", ".widgets", "apps."} {
		if _, ok := wire.ParseStorageVersionName(bad); ok {
			t.Errorf("ParseStorageVersionName(%q) accepted", bad)
		}
	}
}

func TestStorageVersionHash(t *testing.T) {
	// Values published by kube-apiserver's discovery.
	for _, tc := range []struct{ group, version, kind, want string }{
		{"", "v1", "ConfigMap", "qFsyl6wFWjQ="},
		{"apps", "v1", "Deployment", "8aSe+NMegvE="},
	} {
		if got := wire.StorageVersionHash(tc.group, tc.version, tc.kind); got != tc.want {
			t.Errorf("StorageVersionHash(%q, %q, %q) = %s, want %s", tc.group, tc.version, tc.kind, got, tc.want)
		}
	}
}

func TestStorageHash(t *testing.T) {
	h := wire.StorageVersionHash("", "v1", "Secret")
	if got := wire.StorageHash(h, wire.Plaintext); got != h {
		t.Errorf("plaintext hash %q, want the version hash", got)
	}
	sealed := wire.StorageHash(h, "aescbc:key1:3f9a0c12")
	if v, k := wire.SplitStorageHash(sealed); v != h || k != "aescbc:key1:3f9a0c12" {
		t.Errorf("split %q: %q, %q", sealed, v, k)
	}
	if v, k := wire.SplitStorageHash(h); v != h || k != wire.Plaintext {
		t.Errorf("split %q: %q, %q", h, v, k)
	}
	for id, want := range map[string]string{"aescbc:key1:3f9a0c12": "aescbc:key1", "secretbox:a:b:c0ffee00": "secretbox:a:b", "kms:vault": "kms:vault", wire.Plaintext: wire.Plaintext} {
		if got := wire.KeyName(id); got != want {
			t.Errorf("wire.KeyName(%q) = %q, want %q", id, got, want)
		}
	}
	keys := map[string]wire.EncryptionKeys{"a": {Write: "aescbc:k:1", Read: []string{"aescbc:k:1", wire.Plaintext}}}
	parsed, err := wire.ParseEncryptionKeys(wire.FormatEncryptionKeys(keys))
	if err != nil || wire.WriteKeyOf(parsed, "a") != "aescbc:k:1" || wire.WriteKeyOf(parsed, "b") != wire.Plaintext {
		t.Errorf("round trip: %v, %v", parsed, err)
	}
}
