package encryption

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage/value"
)

const config = `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [events]
  providers:
  - identity: {}
- resources: [secrets, widgets.example.com]
  providers:
  - aesgcm:
      keys:
      - {name: new, secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=}
      - {name: old, secret: ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=}
  - identity: {}
- resources: ["*.apps"]
  providers:
  - secretbox:
      keys: [{name: box, secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=}]
- resources: ["*.*"]
  providers:
  - aescbc:
      keys: [{name: all, secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=}]
`

func load(t *testing.T, doc string) (*Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(t.Context(), path, "server-a")
}

// Resources resolve with the configuration's precedence (the resource, then its
// group's wildcard, then *.*), and each gets its providers' key identities.
func TestKeys(t *testing.T) {
	c, err := load(t, config)
	if err != nil {
		t.Fatal(err)
	}
	secrets := c.Keys(schema.GroupResource{Resource: "secrets"})
	if !strings.HasPrefix(secrets.Write, "aesgcm:new:") || len(secrets.Read) != 3 ||
		!strings.HasPrefix(secrets.Read[1], "aesgcm:old:") || secrets.Read[2] != wire.Plaintext {
		t.Errorf("secrets: %+v", secrets)
	}
	if got := c.Keys(schema.GroupResource{Group: "example.com", Resource: "widgets"}); !slices.Equal(got.Read, secrets.Read) {
		t.Errorf("widgets.example.com: %+v, want the secrets' keys", got)
	}
	for gr, want := range map[schema.GroupResource]string{
		{Resource: "events"}:                            wire.Plaintext,
		{Group: "apps", Resource: "deployments"}:        "secretbox:box",
		{Resource: "configmaps"}:                        "aescbc:all",
		{Group: "other.example.com", Resource: "gizmo"}: "aescbc:all",
	} {
		if got := wire.KeyName(c.Keys(gr).Write); got != want {
			t.Errorf("%s writes with %s, want %s", gr, got, want)
		}
	}
	// The same secret under another provider or name is another key.
	if c.Keys(schema.GroupResource{Resource: "configmaps"}).Write == c.Keys(schema.GroupResource{Group: "apps", Resource: "x"}).Write {
		t.Error("two providers' keys share an identity")
	}
	var none *Config
	if got := none.Keys(schema.GroupResource{Resource: "secrets"}); got.Write != wire.Plaintext {
		t.Errorf("no configuration: %+v", got)
	}
}

// Values round-trip through a resource's transformer, are sealed with its write
// key's name in the clear, and read as stale when sealed with another of its keys or
// not at all. Without a configuration, an encrypted value is refused.
func TestTransformer(t *testing.T) {
	c, err := load(t, config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, key := context.Background(), value.DefaultContext("/registry/core/secrets/default/s")
	tr := c.Transformer(schema.GroupResource{Resource: "secrets"})
	sealed, err := tr.TransformToStorage(ctx, []byte(`{"kind":"Secret"}`), key)
	if err != nil {
		t.Fatal(err)
	}
	if got := Sealed(sealed); got != "aesgcm:new" {
		t.Errorf("sealed with %s", got)
	}
	out, stale, err := tr.TransformFromStorage(ctx, sealed, key)
	if err != nil || stale || string(out) != `{"kind":"Secret"}` {
		t.Errorf("opened %q, stale %v, %v", out, stale, err)
	}
	if _, _, err := tr.TransformFromStorage(ctx, sealed, value.DefaultContext("/registry/core/secrets/default/other")); err == nil {
		t.Error("a value moved to another key opened")
	}
	if _, stale, err := tr.TransformFromStorage(ctx, []byte(`{"kind":"Secret"}`), key); err != nil || !stale {
		t.Errorf("plaintext: stale %v, %v", stale, err)
	}
	var none *Config
	if _, _, err := none.Transformer(schema.GroupResource{Resource: "secrets"}).TransformFromStorage(ctx, sealed, key); err == nil {
		t.Error("an encrypted value read without a configuration")
	}
	if got := Sealed([]byte(`{"a":1}`)); got != wire.Plaintext {
		t.Errorf("plaintext is sealed with %s", got)
	}
}

func TestLoadErrors(t *testing.T) {
	for _, doc := range []string{
		"not yaml: [",
		"apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aescbc:\n      keys: [{name: k, secret: c2hvcnQ=}]\n",
	} {
		if _, err := load(t, doc); err == nil || !strings.Contains(err.Error(), "invalid encryption provider configuration") {
			t.Errorf("%q: %v", doc, err)
		}
	}
}
