package identity_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/etcd"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/storage"
	"github.com/concordproject/concord/wire"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
)

// newStore returns a registry serving the built-in catalog's leases over a real etcd,
// and a client of that etcd.
func newStore(t *testing.T) (*registry.Registry, *store.Store, *clientv3.Client) {
	t.Helper()
	ctx := t.Context()
	m, err := etcd.StartLoopback(ctx, filepath.Join(t.TempDir(), "etcd"), etcd.WithUnsafeNoFsync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	client, err := m.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	resources, err := compatibility.Resources(cat, compatibility.Default(cat.BinaryVersion()))
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New()
	namespaces := schema.GroupResource{Resource: "namespaces"}
	for _, res := range resources {
		if gr := res.GroupResource(); gr == identity.GroupResource || gr == namespaces {
			if err := reg.Put(ctx, res); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := store.NewStore(storage.New(client, "/registry"))
	go func() { _ = st.Run(ctx) }()
	ns := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace"}}
	ns.SetName(identity.Namespace)
	if _, err := st.Create(ctx, store.Ref{Resource: reg.Get(namespaces), Version: "v1"}, ns, store.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return reg, st, client
}

func getLease(t *testing.T, reg *registry.Registry, st *store.Store, name string) (*unstructured.Unstructured, error) {
	t.Helper()
	return st.Get(context.Background(), store.Ref{Resource: reg.Get(identity.GroupResource), Version: "v1", Namespace: identity.Namespace, Name: name}, metav1.GetOptions{})
}

// The lease is written on Start with its labels (versions included), holder and timing;
// renewed; recreated at once when deleted (reporting the lapse); deleted by Release.
func TestLease(t *testing.T) {
	reg, st, _ := newStore(t)
	var lapses atomic.Int32
	l, err := identity.NewLease(reg, st, identity.Config{
		ID: "apiserver-test", Hostname: "host-a", Duration: 2 * time.Second, RenewInterval: 100 * time.Millisecond,
		Versions: wire.ComponentVersions{Binary: version.MustParse("1.37"), Emulation: version.MustParse("1.36"), MinCompatibility: version.MustParse("1.35")},
	})
	if err != nil {
		t.Fatal(err)
	}
	l.OnLapse(func() { lapses.Add(1) })
	if l.Valid(time.Now()) || l.Ready() == nil {
		t.Fatal("valid before Run")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stopped := make(chan error)
	go func() { stopped <- l.Run(ctx) }()
	for l.Ready() != nil {
		select {
		case err := <-stopped:
			t.Fatalf("Run returned before the lease was written: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if !l.Valid(time.Now()) || l.Valid(time.Now().Add(3*time.Second)) {
		t.Fatal("validity does not follow the lease duration")
	}
	lease, err := getLease(t, reg, st, "apiserver-test")
	if err != nil {
		t.Fatal(err)
	}
	holder, _, _ := unstructured.NestedString(lease.Object, "spec", "holderIdentity")
	secs, _, _ := unstructured.NestedInt64(lease.Object, "spec", "leaseDurationSeconds")
	if holder != l.HolderIdentity() || secs != 2 || lease.GetLabels()[identity.LabelIdentity] != identity.KubeAPIServer ||
		lease.GetLabels()[identity.LabelHostname] != "host-a" || lease.GetLabels()[wire.LabelEmulationVersion] != "1.36" ||
		lease.GetLabels()[wire.LabelMinCompatibilityVersion] != "1.35" {
		t.Fatalf("lease %v", lease.Object)
	}
	if !identity.IsIdentityLease(lease) || identity.Expired(lease, time.Now()) || !identity.Expired(lease, time.Now().Add(3*time.Second)) {
		t.Fatal("IsIdentityLease/Expired disagree with the lease")
	}

	// Renewed.
	first, _ := identity.ExpiresAt(lease)
	deadline := time.Now().Add(5 * time.Second)
	for {
		cur, err := getLease(t, reg, st, "apiserver-test")
		if err != nil {
			t.Fatal(err)
		}
		if at, _ := identity.ExpiresAt(cur); at.After(first) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not renewed")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Deleted: recreated, the lapse reported.
	if _, _, err := st.Delete(context.Background(), store.Ref{Resource: reg.Get(identity.GroupResource), Version: "v1", Namespace: identity.Namespace, Name: "apiserver-test"}, store.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	for {
		cur, err := getLease(t, reg, st, "apiserver-test")
		if err == nil && cur.GetUID() != lease.GetUID() {
			break
		}
		if time.Since(deleted) > 10*time.Second {
			t.Fatalf("not recreated: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The recreated lease is in etcd before the renewal that wrote it reports the
	// lapse: wait for the report.
	for lapses.Load() == 0 && time.Since(deleted) < 10*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if lapses.Load() != 1 {
		t.Errorf("%d lapses reported, want 1", lapses.Load())
	}

	// Stopped: deleted, so that peers need not wait for it to expire.
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if _, err := getLease(t, reg, st, "apiserver-test"); !apierrors.IsNotFound(err) {
		t.Fatalf("lease after Run returned: %v", err)
	}
}

// A first write that fails does not end Run: the lease is not ready, and is written
// by a retry once the write can succeed.
func TestLeaseFirstWriteRetried(t *testing.T) {
	reg, st, client := newStore(t)
	// An object no server can decode where the lease goes: every write fails until it
	// is removed.
	key := "/registry/coordination.k8s.io/leases/" + identity.Namespace + "/apiserver-retry"
	if _, err := client.Put(t.Context(), key, "not an object"); err != nil {
		t.Fatal(err)
	}
	l, err := identity.NewLease(reg, st, identity.Config{ID: "apiserver-retry", Duration: 2 * time.Second, RenewInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- l.Run(ctx) }()
	// waitReady waits until Ready's error satisfies done, failing if Run returns.
	waitReady := func(what string, done func(error) bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !done(l.Ready()); {
			select {
			case err := <-stopped:
				t.Fatalf("Run returned while waiting for %s: %v", what, err)
			case <-time.After(5 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s: Ready says %v", what, l.Ready())
			}
		}
	}
	waitReady("failed first write", func(err error) bool {
		return err != nil && err.Error() != "the identity lease has not been written yet"
	})
	t.Logf("not ready: %v", l.Ready())
	if l.Valid(time.Now()) {
		t.Fatal("valid with no lease written")
	}
	if _, err := client.Delete(t.Context(), key); err != nil {
		t.Fatal(err)
	}
	// A retry writes the lease.
	waitReady("lease written", func(err error) bool { return err == nil })
	lease, err := getLease(t, reg, st, "apiserver-retry")
	if err != nil || lease.GetName() != "apiserver-retry" {
		t.Fatalf("lease %v: %v", lease, err)
	}
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []identity.Config{
		{Duration: time.Second, RenewInterval: 100 * time.Millisecond},
		{ID: "a", Duration: 1500 * time.Millisecond, RenewInterval: 100 * time.Millisecond},
		{ID: "a", Duration: time.Second, RenewInterval: time.Second},
	} {
		if err := c.Validate(); !errors.Is(err, identity.ErrInvalidConfig) {
			t.Errorf("%+v: %v", c, err)
		}
	}
}
