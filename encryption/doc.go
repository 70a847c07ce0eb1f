// Package encryption is encryption at rest: it loads a server's
// --encryption-provider-config (Kubernetes' apiserver.config.k8s.io/v1
// EncryptionConfiguration: identity, aescbc, aesgcm, secretbox, kms v2), and gives,
// for any resource (custom resources included, through the configuration's
// wildcards), the transformer that seals values on their way to etcd and opens them on
// the way back, and the identities of its keys: the one that seals (the write key)
// and every one that opens.
//
// # What it owns
//
//   - Load: the configuration file, read with k8s.io/apiserver's encryptionconfig
//     (its transformers, validation and KMS v2 plugin clients), and each provider's key
//     identity (wire.EncryptionKeys: "<provider>:<key name>:<fingerprint>",
//     "kms:<name>", or wire.Plaintext).
//   - Config.Transformer and Config.Keys, resolved per resource with the
//     configuration's precedence (the resource itself, then "*.<group>", then "*.*";
//     nothing matching: plaintext, refusing to read encrypted values).
//   - Sealed: which key a value stored in etcd is sealed with, read from its prefix.
//
// # What it must not touch
//
// It knows neither etcd nor objects: package storage applies the transformers to
// every value it reads and writes, and marks values sealed with another key as
// stale; package storageversion reports the key identities next to each server's
// encoding version; the migration trigger turns a new write key into a migration. It
// never logs or exports key material, only fingerprints.
package encryption
