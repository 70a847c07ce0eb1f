package encryption

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	"k8s.io/apiserver/pkg/storage/value"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
)

// ErrInvalidConfig means that the encryption configuration file cannot be used.
var ErrInvalidConfig = errors.New("invalid encryption provider configuration")

// Config is a server's encryption at rest. The nil Config encrypts nothing: every
// resource is written in plaintext, and reading an encrypted value fails with a clear
// error instead of being taken for a corrupt object.
type Config struct {
	transformers encryptionconfig.StaticTransformers
	rules        map[schema.GroupResource]wire.EncryptionKeys
	health       []healthz.HealthChecker
	resolved     sync.Map // schema.GroupResource -> resolved
}

type resolved struct {
	transformer value.Transformer
	keys        wire.EncryptionKeys
}

var plaintext = resolved{transformer: identity.NewEncryptCheckTransformer(), keys: wire.EncryptionKeys{Write: wire.Plaintext, Read: []string{wire.Plaintext}}}

// Load reads the EncryptionConfiguration at path. KMS v2 plugins are dialled in the
// background until ctx is done; serverID names this server to them. Any error wraps
// ErrInvalidConfig.
func Load(ctx context.Context, path, serverID string) (*Config, error) {
	loaded, err := encryptionconfig.LoadEncryptionConfig(ctx, path, false, serverID)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrInvalidConfig, path, err)
	}
	parsed, err := parse(path)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrInvalidConfig, path, err)
	}
	c := &Config{transformers: loaded.Transformers, rules: map[schema.GroupResource]wire.EncryptionKeys{}, health: loaded.HealthChecks}
	for _, rc := range parsed.Resources {
		keys := keysOf(rc.Providers)
		for _, r := range rc.Resources {
			gr := schema.ParseGroupResource(r)
			if _, ok := c.rules[gr]; !ok {
				c.rules[gr] = keys
			}
		}
	}
	return c, nil
}

// parse decodes the configuration file (LoadEncryptionConfig validated it already).
func parse(path string) (*apiserver.EncryptionConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	apiserverinstall.Install(scheme)
	obj, _, err := serializer.NewCodecFactory(scheme).UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*apiserver.EncryptionConfiguration)
	if !ok {
		return nil, fmt.Errorf("%T is not an EncryptionConfiguration", obj)
	}
	return cfg, nil
}

// keysOf returns the key identities of a provider list: the first key of the first
// provider writes, every key reads.
func keysOf(providers []apiserver.ProviderConfiguration) wire.EncryptionKeys {
	var out wire.EncryptionKeys
	for _, p := range providers {
		for _, id := range providerKeys(p) {
			if out.Write == "" {
				out.Write = id
			}
			out.Read = append(out.Read, id)
		}
	}
	return out
}

func providerKeys(p apiserver.ProviderConfiguration) []string {
	named := func(provider string, keys []apiserver.Key) []string {
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = provider + ":" + k.Name + ":" + fingerprint(provider, k.Secret)
		}
		return out
	}
	switch {
	case p.AESCBC != nil:
		return named("aescbc", p.AESCBC.Keys)
	case p.AESGCM != nil:
		return named("aesgcm", p.AESGCM.Keys)
	case p.Secretbox != nil:
		return named("secretbox", p.Secretbox.Keys)
	case p.KMS != nil:
		return []string{"kms:" + p.KMS.Name}
	}
	return []string{wire.Plaintext}
}

// fingerprint tells keys of one name apart without revealing them: the first 4 bytes
// of the SHA-256 of the provider and the key, in hex.
func fingerprint(provider, secret string) string {
	sum := sha256.Sum256([]byte("concord encryption key\x00" + provider + "\x00" + secret))
	return hex.EncodeToString(sum[:4])
}

// resolve returns what applies to gr, computed once.
func (c *Config) resolve(gr schema.GroupResource) resolved {
	if c == nil {
		return plaintext
	}
	if r, ok := c.resolved.Load(gr); ok {
		return r.(resolved)
	}
	r := plaintext
	for _, rule := range []schema.GroupResource{gr, {Group: gr.Group, Resource: "*"}, {Group: "*", Resource: "*"}} {
		if keys, ok := c.rules[rule]; ok {
			r = resolved{transformer: c.transformers.TransformerForResource(gr), keys: keys}
			break
		}
	}
	c.resolved.Store(gr, r)
	return r
}

// Transformer returns the transformer of gr's values.
func (c *Config) Transformer(gr schema.GroupResource) value.Transformer {
	return c.resolve(gr).transformer
}

// Keys returns the identities of gr's keys.
func (c *Config) Keys(gr schema.GroupResource) wire.EncryptionKeys {
	return c.resolve(gr).keys
}

// HealthChecks are the KMS plugins' checks (kms-providers), for /healthz, /livez and
// /readyz; none without KMS.
func (c *Config) HealthChecks() []healthz.HealthChecker {
	if c == nil {
		return nil
	}
	return c.health
}

// WaitReady waits until every KMS plugin has answered (a KMS v2 provider seals
// nothing until its first data key is made), polling its health check, or until ctx
// is done: then the last check's error.
func (c *Config) WaitReady(ctx context.Context) error {
	req := (&http.Request{}).WithContext(ctx)
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		last = nil
		for _, h := range c.HealthChecks() {
			if err := h.Check(req); err != nil {
				last = fmt.Errorf("%s: %w", h.Name(), err)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		if last == nil {
			last = err
		}
		return fmt.Errorf("the KMS plugins are not ready: %w", last)
	}
	return nil
}

// encryptedPrefix begins every value an encrypting provider wrote.
var encryptedPrefix = []byte("k8s:enc:")

// Sealed returns the name of the key a stored value is sealed with, as wire.KeyName
// gives it ("aescbc:key1", "kms:<name>"), or wire.Plaintext.
func Sealed(stored []byte) string {
	rest, ok := bytes.CutPrefix(stored, encryptedPrefix)
	if !ok {
		return wire.Plaintext
	}
	// <provider>:v1:<key name>: for aescbc, aesgcm, secretbox; <provider>:v2:<name>: for KMS.
	parts := bytes.SplitN(rest, []byte(":"), 4)
	if len(parts) < 4 {
		return "unknown"
	}
	return string(parts[0]) + ":" + string(parts[2])
}
