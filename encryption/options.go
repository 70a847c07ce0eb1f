package encryption

import (
	"context"
	"fmt"
	"time"

	"github.com/concordproject/concord/registry"
	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/apis/apiserver/validation"
	"k8s.io/apiserver/pkg/storage/value"
)

// kmsReadyTimeout bounds the wait, at start, for the KMS plugins' first answer.
const kmsReadyTimeout = 30 * time.Second

// Options are the encryption at rest flag, kube-apiserver's.
type Options struct {
	// ProviderConfig is the EncryptionConfiguration (apiserver.config.k8s.io/v1) that
	// seals stored values (--encryption-provider-config); empty: plaintext.
	ProviderConfig string
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ProviderConfig, "encryption-provider-config", o.ProviderConfig,
		"EncryptionConfiguration (apiserver.config.k8s.io/v1) of the providers that encrypt stored values at rest, per resource (identity, aescbc, aesgcm, secretbox, kms v2). A new write key is migrated to by itself once every server writes with it.")
}

// Validate reads the configuration file and checks it as kube-apiserver does, so that
// a bad one is reported before the server listens or connects to anything; Load
// reads it again and dials its KMS plugins.
func (o *Options) Validate() []error {
	if o.ProviderConfig == "" {
		return nil
	}
	cfg, err := parse(o.ProviderConfig)
	if err == nil {
		err = validation.ValidateEncryptionConfiguration(cfg, false).ToAggregate()
	}
	if err != nil {
		return []error{fmt.Errorf("%w %s: %w", ErrInvalidConfig, o.ProviderConfig, err)}
	}
	return nil
}

// Load reads the configuration for the server serverID (KMS plugins are told it) and
// waits, up to kmsReadyTimeout, until its KMS plugins (if any) answer; nil, nil
// without --encryption-provider-config.
func (o *Options) Load(ctx context.Context, serverID string) (*Config, error) {
	if o.ProviderConfig == "" {
		return nil, nil
	}
	cfg, err := Load(ctx, o.ProviderConfig, serverID)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, kmsReadyTimeout)
	defer cancel()
	if err := cfg.WaitReady(wctx); err != nil {
		return nil, err
	}
	return cfg, nil
}

// KeyTransformer is the transformer of the value stored at an etcd key: its
// resource's (nil for a key of no resource), for storage.Store.WithTransformers. A
// nil Config seals nothing, and an encrypted value read is then an error naming its
// key rather than a corrupt object.
func (c *Config) KeyTransformer(key string) value.Transformer {
	gr, ok := registry.GroupResourceOfKey(key)
	if !ok {
		return nil
	}
	return c.Transformer(gr)
}
