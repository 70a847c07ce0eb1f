package storageversion

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/storage"
	"github.com/concordproject/concord/wire"
	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Regression (found by the safety suite: restarted servers lost their custom resource
// entries for good): a registry change seen while a custom resource is being
// published, tracked but not yet in the registry, must not untrack it, or its worker
// withdraws the entry Publish has just written.
func TestPublishSurvivesARegistryChange(t *testing.T) {
	ctx := t.Context()
	m, reg, _ := runManager(t)
	res := &registry.Resource{
		Group: "example.com", Namespaced: true, StorageVersion: "v1",
		Names:     apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
		Versions:  []registry.Version{{Name: "v1", Served: true}},
		Converter: registry.NoneConverter{Group: "example.com"},
		Owner:     &registry.OwnerRef{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com", UID: "u1"},
	}
	err := m.Publish(ctx, res, func(ctx context.Context, r *registry.Resource) error {
		m.registryChanged() // another resource changed the registry meanwhile
		return reg.Put(ctx, r)
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.lookup(res.GroupResource()) == nil {
		t.Fatal("the published resource is no longer tracked: its entry will be withdrawn")
	}
}

// runManager runs a manager over a real etcd, with a registry holding the
// storageversions resource. stop stops it and waits until Run has returned.
func runManager(t *testing.T) (m *Manager, reg *registry.Registry, stop func()) {
	t.Helper()
	return runManagerWith(t, managerSetup{})
}

// managerSetup changes what runManagerWith starts a Manager on.
type managerSetup struct {
	// client, if set, changes the etcd client before the store uses it.
	client func(*clientv3.Client)
}

func runManagerWith(t *testing.T, setup managerSetup) (m *Manager, reg *registry.Registry, stop func()) {
	t.Helper()
	ctx := t.Context()
	client := etcdtest.Start(t)
	if setup.client != nil {
		setup.client(client)
	}
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	resources, err := compatibility.Resources(cat, compatibility.Default(cat.BinaryVersion()))
	if err != nil {
		t.Fatal(err)
	}
	reg = registry.New()
	for _, res := range resources {
		if res.GroupResource() == GroupResource {
			if err := Configure(res); err != nil {
				t.Fatal(err)
			}
			if err := reg.Put(ctx, res); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := store.NewStore(storage.New(client, "/registry"))
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { _ = st.Run(runCtx) }()
	m, err = NewManager(Config{ServerID: "s1", Registry: reg, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(stopped)
		_ = m.Run(runCtx)
	}()
	stop = func() {
		cancel()
		<-stopped
	}
	t.Cleanup(stop)
	if err := m.WaitFirstRound(ctx); err != nil {
		t.Fatal(err)
	}
	return m, reg, stop
}

// Regression (TestShutdownOrder, once in a suite run): an entry whose withdrawal was
// queued after the workers had stopped, such as that of a custom resource whose first
// publication failed as the server stopped, must be withdrawn at shutdown too, not
// left for the garbage collector.
func TestShutdownWithdrawsUntrackedEntries(t *testing.T) {
	ctx := t.Context()
	m, _, stop := runManager(t)
	owner := &registry.OwnerRef{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com", UID: "u1"}
	// Written as Publish writes it, for a resource the manager does not track (the
	// publication abandoned, its worker no longer running).
	if _, _, err := m.objs.putEntry(ctx, "example.com.widgets", Entry{APIServerID: "s1", EncodingVersion: "example.com/v1",
		DecodableVersions: []string{"example.com/v1"}, ServedVersions: []string{"example.com/v1"}},
		wire.EncryptionKeys{Write: wire.Plaintext}, owner); err != nil {
		t.Fatal(err)
	}
	if m.lookup(schema.GroupResource{Group: "example.com", Resource: "widgets"}) != nil {
		t.Fatal("the resource is tracked; the test needs an untracked one")
	}
	stop()
	for _, name := range []string{"example.com.widgets", wire.StorageVersionName(GroupResource)} {
		if _, _, err := m.objs.get(ctx, name); !apierrors.IsNotFound(err) {
			t.Errorf("StorageVersion %s after the manager stopped: %v (want it withdrawn, and deleted with its last entry)", name, err)
		}
	}
}

// Found by the safety suite (a version added to a CRD and made its storage version at
// once): a server must not switch a custom resource to a storage version another
// server reporting it does not decode yet. It keeps the previous one, says it decodes
// the new one, and switches once the others do.
func TestPublishWaitsForPeersToDecode(t *testing.T) {
	ctx := t.Context()
	m, reg, _ := runManager(t)
	owner := &registry.OwnerRef{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com", UID: "u1"}
	widgets := func(storage string, versions ...string) *registry.Resource {
		res := &registry.Resource{
			Group: "example.com", Namespaced: true, StorageVersion: storage, Owner: owner,
			Names:     apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Converter: registry.NoneConverter{Group: "example.com"},
		}
		for _, v := range versions {
			res.Versions = append(res.Versions, registry.Version{Name: v, Served: true})
		}
		return res
	}
	if err := m.Publish(ctx, widgets("v1", "v1"), reg.Put); err != nil {
		t.Fatal(err)
	}
	name := "example.com.widgets"
	peer := func(decodable ...string) {
		t.Helper()
		if _, _, err := m.objs.putEntry(ctx, name, Entry{APIServerID: "peer", EncodingVersion: "example.com/v1",
			DecodableVersions: decodable, ServedVersions: decodable}, wire.EncryptionKeys{Write: wire.Plaintext}, owner); err != nil {
			t.Fatal(err)
		}
	}
	peer("example.com/v1")
	waitFor(t, "the manager to see the peer", func() bool {
		obj, ok, _ := m.informer.GetStore().GetByKey(name)
		if !ok {
			return false
		}
		// The object may be cached before its status is written.
		entries, _, _ := unstructured.NestedSlice(obj.(*unstructured.Unstructured).Object, "status", "storageVersions")
		return len(entries) == 2
	})
	err := m.Publish(ctx, widgets("v3", "v1", "v3"), reg.Put)
	if !errors.Is(err, ErrPeersCatchingUp) {
		t.Fatalf("switching to v3 while the peer decodes v1 only: %v", err)
	}
	if sv := reg.Get(schema.GroupResource{Group: "example.com", Resource: "widgets"}).StorageVersion; sv != "v1" {
		t.Errorf("serving with storage version %s while the peer cannot read v3", sv)
	}
	if e := m.lookup(schema.GroupResource{Group: "example.com", Resource: "widgets"}).desired.Load(); e.EncodingVersion != "example.com/v1" ||
		!slices.Contains(e.DecodableVersions, "example.com/v3") {
		t.Errorf("entry while waiting: %+v", e)
	}
	peer("example.com/v1", "example.com/v3")
	waitFor(t, "the switch once the peer decodes v3", func() bool {
		return m.Publish(ctx, widgets("v3", "v1", "v3"), reg.Put) == nil
	})
	if sv := reg.Get(schema.GroupResource{Group: "example.com", Resource: "widgets"}).StorageVersion; sv != "v3" {
		t.Errorf("storage version %s after the peer caught up", sv)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An object putEntry creates but cannot write its entry into (here encryption keys
// whose annotation is over metadata's size limit; at a server's stop, a context ended
// between the two writes) is deleted again, not left empty for the collector:
// TestShutdownOrder found one left once in a suite run.
func TestPutEntryUndoesItsCreation(t *testing.T) {
	ctx := t.Context()
	m, _, _ := runManager(t)
	owner := &registry.OwnerRef{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "widgets.example.com", UID: "u1"}
	for _, owner := range []*registry.OwnerRef{owner, nil} {
		_, _, err := m.objs.putEntry(ctx, "example.com.widgets", Entry{APIServerID: "s1", EncodingVersion: "example.com/v1",
			DecodableVersions: []string{"example.com/v1"}, ServedVersions: []string{"example.com/v1"}},
			wire.EncryptionKeys{Write: strings.Repeat("k", 300<<10)}, owner)
		if !apierrors.IsInvalid(err) {
			t.Fatalf("owner %v: writing an invalid entry: %v, want it refused as invalid", owner, err)
		}
		if _, _, err := m.objs.get(ctx, "example.com.widgets"); !apierrors.IsNotFound(err) {
			t.Errorf("owner %v: the object created for the refused entry is still there (%v)", owner, err)
		}
	}
}

// A creation etcd commits while its caller gives up is still known to putEntry: the
// object is written, found without its entry, and removed, not left empty (as
// TestShutdownOrder once found one, left by a server that stopped while it created it).
func TestPutEntryCreationOutlivesItsCaller(t *testing.T) {
	const name = "example.com.widgets"
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	m, _, _ := runManagerWith(t, managerSetup{client: func(c *clientv3.Client) {
		c.KV = &givingUpKV{KV: c.KV, suffix: "/" + name, giveUp: cancel}
	}})
	_, _, err := m.objs.putEntry(ctx, name, Entry{APIServerID: "s1", EncodingVersion: "example.com/v1",
		DecodableVersions: []string{"example.com/v1"}, ServedVersions: []string{"example.com/v1"}}, wire.EncryptionKeys{}, nil)
	if err == nil {
		t.Fatal("putEntry whose caller gave up during the creation succeeded")
	}
	if obj, _, err := m.objs.get(t.Context(), name); !apierrors.IsNotFound(err) {
		t.Fatalf("the object created as putEntry's caller gave up is still there (%v): %v", err, obj)
	}
}

// givingUpKV is an etcd client whose caller gives up (giveUp) on the first
// transaction that writes a key ending in suffix once etcd has committed it, and which
// then reports the caller's context error, as a client does when its request reached
// etcd before the caller's context ended. A transaction whose context has already
// ended fails without reaching etcd, as with the real client.
type givingUpKV struct {
	clientv3.KV
	suffix string
	giveUp func()
	gaveUp atomic.Bool
}

func (kv *givingUpKV) Txn(ctx context.Context) clientv3.Txn {
	return &givingUpTxn{Txn: kv.KV.Txn(context.WithoutCancel(ctx)), kv: kv, ctx: ctx}
}

type givingUpTxn struct {
	clientv3.Txn
	kv     *givingUpKV
	ctx    context.Context
	writes bool
}

func (t *givingUpTxn) If(cs ...clientv3.Cmp) clientv3.Txn {
	t.Txn = t.Txn.If(cs...)
	return t
}

func (t *givingUpTxn) Then(ops ...clientv3.Op) clientv3.Txn {
	for _, op := range ops {
		t.writes = t.writes || (op.IsPut() && strings.HasSuffix(string(op.KeyBytes()), t.kv.suffix))
	}
	t.Txn = t.Txn.Then(ops...)
	return t
}

func (t *givingUpTxn) Else(ops ...clientv3.Op) clientv3.Txn {
	t.Txn = t.Txn.Else(ops...)
	return t
}

func (t *givingUpTxn) Commit() (*clientv3.TxnResponse, error) {
	if err := t.ctx.Err(); err != nil {
		return nil, err
	}
	resp, err := t.Txn.Commit()
	if err == nil && t.writes && t.kv.gaveUp.CompareAndSwap(false, true) {
		t.kv.giveUp()
	}
	if err == nil && t.ctx.Err() != nil {
		return nil, t.ctx.Err()
	}
	return resp, err
}
