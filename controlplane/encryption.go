package controlplane

import (
	"context"
	"time"

	"github.com/concordproject/concord/encryption"
	"github.com/concordproject/concord/registry"
	"k8s.io/apiserver/pkg/storage/value"
)

// kmsReadyTimeout bounds the wait, at start, for the KMS plugins' first answer.
const kmsReadyTimeout = 30 * time.Second

// loadEncryption reads --encryption-provider-config (in the credentials phase: KMS
// plugins are told the server ID) and makes raw storage seal and open every value
// with it, once its KMS plugins (if any) answer. Without the flag every value is written in plaintext, and an encrypted one
// read is an error naming its key rather than a corrupt object.
func (i *Instance) loadEncryption(ctx context.Context) error {
	if path := i.opts.EncryptionProviderConfig; path != "" {
		cfg, err := encryption.Load(ctx, path, i.ServerID)
		if err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, kmsReadyTimeout)
		defer cancel()
		if err := cfg.WaitReady(wctx); err != nil {
			return err
		}
		i.Encryption = cfg
	}
	enc := i.Encryption
	i.raw.WithTransformers(func(key string) value.Transformer {
		gr, ok := registry.GroupResourceOfKey(key)
		if !ok {
			return nil
		}
		return enc.Transformer(gr)
	})
	return nil
}
