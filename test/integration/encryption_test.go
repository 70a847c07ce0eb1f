package integration

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/encryption"
	"github.com/concordproject/concord/harness"
	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/upgradecheck"
	"github.com/concordproject/concord/wire"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
)

// encryptionKey is one named AES key of an EncryptionConfiguration.
type encryptionKey struct{ name, secret string }

func newEncryptionKey(t *testing.T, name string) encryptionKey {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return encryptionKey{name: name, secret: base64.StdEncoding.EncodeToString(b)}
}

// writeEncryptionConfig writes an EncryptionConfiguration for resources whose
// providers are, in order, aescbc with keys (when any) and identity (when
// plaintextFirst, before aescbc; else after it).
func writeEncryptionConfig(t *testing.T, resources []string, plaintextFirst bool, keys ...encryptionKey) string {
	t.Helper()
	var aes strings.Builder
	if len(keys) > 0 {
		aes.WriteString("  - aescbc:\n      keys:\n")
		for _, k := range keys {
			fmt.Fprintf(&aes, "      - name: %s\n        secret: %s\n", k.name, k.secret)
		}
	}
	providers := aes.String() + "  - identity: {}\n"
	if plaintextFirst {
		providers = "  - identity: {}\n" + aes.String()
	}
	doc := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [" +
		strings.Join(resources, ", ") + "]\n  providers:\n" + providers
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sealedWith counts the values under an etcd prefix by the key that seals them.
func sealedWith(t *testing.T, c *harness.Cluster, prefix string) map[string]int {
	t.Helper()
	resp, err := c.EtcdClient.Get(t.Context(), prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, kv := range resp.Kvs {
		out[encryption.Sealed(kv.Value)]++
	}
	return out
}

// reconfigure restarts server s with the encryption configuration at path.
func reconfigure(t *testing.T, s *harness.Server, path string) {
	t.Helper()
	s.Options.Encryption.ProviderConfig = path
	s.Restart(t)
}

// TestEncryptionKeyRotation walks Kubernetes' key-rotation procedure on two servers
// sharing etcd, and checks what Concord adds to it: each server reports the keys it
// seals and opens Secrets with next to its entry in the StorageVersion; while the
// servers disagree on the write key nothing is migrated; once they agree, the
// storage-migration trigger migrates every Secret to the new key by itself, which etcd
// then shows; `concord upgrade-check --drop-key` says when the old key is still needed
// and when it can go; and once it is gone everything still reads.
func TestEncryptionKeyRotation(t *testing.T) {
	t.Parallel()
	key1, key2 := newEncryptionKey(t, "key1"), newEncryptionKey(t, "key2")
	secrets := []string{"secrets"}
	readKey1 := writeEncryptionConfig(t, secrets, true, key1)
	c := harness.Start(t, 2, harness.WithStorageMigration(), harness.WithServerOptions(func(_ int, o *controlplane.Options) { o.Encryption.ProviderConfig = readKey1 }))
	gr := schema.GroupResource{Resource: "secrets"}
	const prefix = "/registry/core/secrets/"
	const n = 30
	client := c.Servers[0].Clientset(t)
	for i := range n {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%02d", i)}, StringData: map[string]string{"password": fmt.Sprintf("hunter-%02d", i)}}
		if _, err := client.CoreV1().Secrets("default").Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := sealedWith(t, c, prefix); got[wire.Plaintext] != n || len(got) != 1 {
		t.Fatalf("writing plaintext (identity first): etcd holds %v", got)
	}
	versionHash := wire.StorageVersionHash("", "v1", "Secret")
	dyn := c.Servers[0].Dynamic(t)
	waitPersisted(t, dyn, gr, versionHash, versionHash)
	migrated := len(migrationsOf(t, dyn, gr)) // the state's first migration

	// Server 0 writes with key1, server 1 still in plaintext: they disagree, every
	// hash is recorded, nothing is migrated; server 1 reads what server 0 seals.
	writeKey1 := writeEncryptionConfig(t, secrets, false, key1)
	reconfigure(t, c.Servers[0], writeKey1)
	k1 := keyIdentity(t, c, gr, c.Servers[0].ServerID)
	hashKey1 := wire.StorageHash(versionHash, k1)
	waitPersisted(t, dyn, gr, migrationapi.Unknown, versionHash, hashKey1)
	if _, err := c.Servers[0].Clientset(t).CoreV1().Secrets("default").Update(t.Context(), secretWith("s-00", "rotated"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantSecret(t, c.Servers[1].Clientset(t), "s-00", "rotated")
	// An update that changes nothing still writes a value sealed otherwise (stale).
	s01, err := c.Servers[0].Clientset(t).CoreV1().Secrets("default").Get(t.Context(), "s-01", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Servers[0].Clientset(t).CoreV1().Secrets("default").Update(t.Context(), s01, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := sealedWith(t, c, prefix); got["aescbc:key1"] != 2 || got[wire.Plaintext] != n-2 {
		t.Fatalf("while the servers disagree: etcd holds %v, want the two Secrets server 0 wrote sealed", got)
	}
	if ms := migrationsOf(t, dyn, gr); len(ms) != migrated {
		t.Fatalf("%d migrations of secrets started while the servers disagree on the write key", len(ms)-migrated)
	}

	// Server 1 writes with key1 too: agreement, and the trigger migrates every Secret.
	reconfigure(t, c.Servers[1], writeKey1)
	waitPersisted(t, dyn, gr, hashKey1, hashKey1)
	if got := sealedWith(t, c, prefix); got["aescbc:key1"] != n || len(got) != 1 {
		t.Fatalf("after the migration to key1: etcd holds %v, want all %d sealed with key1", got, n)
	}

	// Rotation: key2 is added for reading everywhere, then made the write key on
	// server 0 only: key1 is still needed (server 1 writes with it).
	bothKey1First := writeEncryptionConfig(t, secrets, false, key1, key2)
	for _, s := range c.Servers {
		reconfigure(t, s, bothKey1First)
	}
	bothKey2First := writeEncryptionConfig(t, secrets, false, key2, key1)
	reconfigure(t, c.Servers[0], bothKey2First)
	hashKey2 := wire.StorageHash(versionHash, keyIdentity(t, c, gr, c.Servers[0].ServerID))
	waitPersisted(t, dyn, gr, migrationapi.Unknown, hashKey1, hashKey2)
	out, err := dropKeyCheck(t, c.Servers[0], "aescbc:key1")
	if err == nil || !strings.Contains(out, "is still needed") || !strings.Contains(out, c.Servers[1].ServerID+" writes with it") {
		t.Fatalf("upgrade-check --drop-key aescbc:key1 while server 1 writes with it: %v\n%s", err, out)
	}

	// Server 1 follows: migration to key2; key1 can go.
	reconfigure(t, c.Servers[1], bothKey2First)
	waitPersisted(t, dyn, gr, hashKey2, hashKey2)
	if got := sealedWith(t, c, prefix); got["aescbc:key2"] != n || len(got) != 1 {
		t.Fatalf("after the rotation: etcd holds %v, want all %d sealed with key2", got, n)
	}
	if out, err := dropKeyCheck(t, c.Servers[0], "aescbc:key1"); err != nil || !strings.Contains(out, "can be removed") {
		t.Fatalf("upgrade-check --drop-key aescbc:key1 after the migration: %v\n%s", err, out)
	}

	// key1 removed from both: every Secret still reads, on both servers.
	onlyKey2 := writeEncryptionConfig(t, secrets, false, key2)
	for _, s := range c.Servers {
		reconfigure(t, s, onlyKey2)
	}
	for _, s := range c.Servers {
		list, err := s.Clientset(t).CoreV1().Secrets("default").List(t.Context(), metav1.ListOptions{})
		if err != nil || len(list.Items) != n {
			t.Fatalf("server %d lists %d Secrets after key1 was removed: %v", s.Index, len(list.Items), err)
		}
		wantSecret(t, s.Clientset(t), "s-07", "hunter-07")
	}
	// A server that stops withdraws its key report with its entry.
	c.Servers[1].Stop(t)
	waitFor(t, "server 1's keys withdrawn", func() (bool, error) {
		sv, err := c.Servers[0].Clientset(t).InternalV1alpha1().StorageVersions().Get(t.Context(), wire.StorageVersionName(gr), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		keys, err := wire.ParseEncryptionKeys(sv.Annotations[wire.AnnotationEncryptionKeys])
		_, has1 := keys[c.Servers[1].ServerID]
		_, has0 := keys[c.Servers[0].ServerID]
		return !has1 && has0, err
	})
	raw, err := c.EtcdClient.Get(t.Context(), prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range raw.Kvs {
		if bytes.Contains(kv.Value, []byte("hunter-")) || bytes.Contains(kv.Value, []byte(base64.StdEncoding.EncodeToString([]byte("hunter-")))) {
			t.Errorf("etcd holds %s in the clear", kv.Key)
		}
	}
}

// keyIdentity waits for server id's report of gr's write key and returns it.
func keyIdentity(t *testing.T, c *harness.Cluster, gr schema.GroupResource, id string) string {
	t.Helper()
	var key string
	waitFor(t, "the write key of "+id, func() (bool, error) {
		sv, err := c.Servers[0].Clientset(t).InternalV1alpha1().StorageVersions().Get(t.Context(), wire.StorageVersionName(gr), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		keys, err := wire.ParseEncryptionKeys(sv.Annotations[wire.AnnotationEncryptionKeys])
		key = wire.WriteKeyOf(keys, id)
		return key != wire.Plaintext, err
	})
	return key
}

func secretWith(name, password string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"password": password}}
}

func wantSecret(t *testing.T, client kubernetes.Interface, name, password string) {
	t.Helper()
	s, err := client.CoreV1().Secrets("default").Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(s.Data["password"]); got != password {
		t.Fatalf("secret %s: password %q, want %q", name, got, password)
	}
}

// dropKeyCheck runs `concord upgrade-check --drop-key key` against s.
func dropKeyCheck(t *testing.T, s *harness.Server, key string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := upgradecheck.NewCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--kubeconfig", s.KubeconfigPath, "--drop-key", key})
	err := cmd.ExecuteContext(t.Context())
	t.Logf("upgrade-check --drop-key %s:\n%s", key, out.String())
	return out.String(), err
}

// TestEncryptionAnyResource: a configuration can seal any resource, custom resources
// included (through a wildcard), with any provider; gets, lists (from etcd and from
// the watch cache) and watches read the values opened, while etcd holds them sealed;
// a value sealed with a key the server does not have is a 500 naming it, not a
// corrupt object.
func TestEncryptionAnyResource(t *testing.T) {
	t.Parallel()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	secret := base64.StdEncoding.EncodeToString(b)
	doc := `apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [configmaps]
  providers:
  - secretbox:
      keys: [{name: box1, secret: ` + secret + `}]
- resources: ["*.sealed.example.com"]
  providers:
  - aesgcm:
      keys: [{name: gcm1, secret: ` + secret + `}]
`
	path := filepath.Join(t.TempDir(), "encryption.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	c := harness.Start(t, 1, harness.WithStorageMigration(), harness.WithServerOptions(func(_ int, o *controlplane.Options) { o.Encryption.ProviderConfig = path }))
	s := c.Servers[0]
	e := newMigrationEnv(t, c, "sealed.example.com", "v1")
	e.seed("w", "v1", 5, 1)
	client := s.Clientset(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}}
	if _, err := client.CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]int{
		"configmaps": sealedWith(t, c, "/registry/core/configmaps/default/"),
		"widgets":    sealedWith(t, c, "/registry/sealed.example.com/widgets/"),
		"namespaces": sealedWith(t, c, "/registry/core/namespaces/"),
	}
	if got["configmaps"]["secretbox:box1"] == 0 || got["configmaps"][wire.Plaintext] != 0 || (got["widgets"]["aesgcm:gcm1"] != 5 || len(got["widgets"]) != 1) ||
		got["namespaces"][wire.Plaintext] == 0 || len(got["namespaces"]) != 1 {
		t.Fatalf("etcd holds %v", got)
	}

	// Reads open the values: from etcd, then from the watch cache once it runs.
	for range 2 {
		list, err := s.Dynamic(t).Resource(e.gvr("v1")).Namespace("default").List(t.Context(), metav1.ListOptions{})
		if err != nil || len(list.Items) != 5 {
			t.Fatalf("list of widgets: %d items, %v", len(list.Items), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	w, err := client.CoreV1().ConfigMaps("default").Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=cm", ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if got, ok := ev.Object.(*corev1.ConfigMap); !ok || got.Data["k"] != "v" {
			t.Fatalf("watch sent %v", ev.Object)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
	w.Stop()

	// A value sealed with a key this server lacks.
	foreign := []byte("k8s:enc:aescbc:v1:other:" + strings.Repeat("x", 48))
	if _, err := c.EtcdClient.Put(t.Context(), "/registry/core/configmaps/default/foreign", string(foreign)); err != nil {
		t.Fatal(err)
	}
	_, err = client.CoreV1().ConfigMaps("default").Get(t.Context(), "foreign", metav1.GetOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "core/configmaps/default/foreign") || !strings.Contains(err.Error(), "cannot be read") {
		t.Fatalf("get of a value sealed with an unknown key: %v", err)
	}
	// Nor is it deleted, even when the client accepts the risk (kube-apiserver 1.37
	// would): the option is ignored, the value stays for the operator.
	unsafe := true
	err = client.CoreV1().ConfigMaps("default").Delete(t.Context(), "foreign", metav1.DeleteOptions{IgnoreStoreReadErrorWithClusterBreakingPotential: &unsafe})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "cannot be read") {
		t.Fatalf("unsafe delete of a value sealed with an unknown key: %v", err)
	}
	if kv, err := c.EtcdClient.Get(t.Context(), "/registry/core/configmaps/default/foreign"); err != nil || len(kv.Kvs) != 1 || string(kv.Kvs[0].Value) != string(foreign) {
		t.Fatalf("the unreadable value after the refused delete: %v, %v", kv, err)
	}
}
