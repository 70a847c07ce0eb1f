package integration

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kmsservice "k8s.io/kms/pkg/service"
)

// kmsPlugin is a KMS v2 plugin: it wraps the data keys the API server sends with an
// AES-GCM key of its own (the key-encryption key a real plugin keeps in an HSM or a
// cloud KMS), over the KMS v2 gRPC protocol on a Unix socket.
type kmsPlugin struct {
	aead              cipher.AEAD
	encrypts, decrypt atomic.Int64
}

func startKMSPlugin(t *testing.T) (socket string, p *kmsPlugin) {
	t.Helper()
	kek := make([]byte, 32)
	if _, err := rand.Read(kek); err != nil {
		t.Fatal(err)
	}
	block, err := aes.NewCipher(kek)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	p = &kmsPlugin{aead: aead}
	dir, err := os.MkdirTemp("", "kms") // short: a Unix socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	socket = filepath.Join(dir, "kms.sock")
	svc := kmsservice.NewGRPCService(socket, 5*time.Second, p)
	done := make(chan error, 1)
	go func() { done <- svc.ListenAndServe() }()
	t.Cleanup(func() { svc.Close(); <-done })
	return socket, p
}

const kmsKeyID = "kek-1"

func (p *kmsPlugin) Encrypt(_ context.Context, _ string, data []byte) (*kmsservice.EncryptResponse, error) {
	p.encrypts.Add(1)
	nonce := make([]byte, p.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return &kmsservice.EncryptResponse{Ciphertext: p.aead.Seal(nonce, nonce, data, nil), KeyID: kmsKeyID}, nil
}

func (p *kmsPlugin) Decrypt(_ context.Context, _ string, req *kmsservice.DecryptRequest) ([]byte, error) {
	p.decrypt.Add(1)
	n := p.aead.NonceSize()
	if req.KeyID != kmsKeyID || len(req.Ciphertext) < n {
		return nil, errors.New("not sealed by this plugin")
	}
	return p.aead.Open(nil, req.Ciphertext[:n], req.Ciphertext[n:], nil)
}

func (p *kmsPlugin) Status(context.Context) (*kmsservice.StatusResponse, error) {
	return &kmsservice.StatusResponse{Version: "v2", Healthz: "ok", KeyID: kmsKeyID}, nil
}

// TestEncryptionKMS: Secrets sealed through a KMS v2 plugin over gRPC (envelope
// encryption: the server seals with a data key the plugin wraps), readable through the
// server, reported as the write key kms:<name>, with the plugin's health among the
// server's checks.
func TestEncryptionKMS(t *testing.T) {
	t.Parallel()
	socket, plugin := startKMSPlugin(t)
	doc := `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - kms:
      apiVersion: v2
      name: testkms
      endpoint: unix://` + socket + `
      timeout: 3s
  - identity: {}
`
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	c := harness.Start(t, 1, harness.WithServerOptions(func(_ int, o *controlplane.Options) { o.Encryption.ProviderConfig = path }))
	s := c.Servers[0]
	client := s.Clientset(t)
	if _, err := client.CoreV1().Secrets("default").Create(t.Context(), secretWith("vault", "kms-sealed"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := sealedWith(t, c, "/registry/core/secrets/"); got["kms:testkms"] != 1 || len(got) != 1 {
		t.Fatalf("etcd holds %v, want the Secret sealed by kms:testkms", got)
	}
	raw, err := c.EtcdClient.Get(t.Context(), "/registry/core/secrets/default/vault")
	if err != nil || len(raw.Kvs) != 1 || strings.Contains(string(raw.Kvs[0].Value), "kms-sealed") {
		t.Fatalf("etcd value of the Secret: %v", err)
	}
	wantSecret(t, client, "vault", "kms-sealed")
	if plugin.encrypts.Load() == 0 {
		t.Error("the plugin never wrapped a data key")
	}
	if got := keyIdentity(t, c, schema.GroupResource{Resource: "secrets"}, s.ServerID); got != "kms:testkms" {
		t.Errorf("write key reported %q, want kms:testkms", got)
	}
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		// /readyz also waits for checks of a just-started server, kms-providers aside.
		waitFor(t, path+"?verbose saying [+]kms-providers ok", func() (bool, error) {
			body, err := client.CoreV1().RESTClient().Get().AbsPath(path).Param("verbose", "true").DoRaw(t.Context())
			return err == nil && strings.Contains(string(body), "[+]kms-providers ok"), nil
		})
	}
}
