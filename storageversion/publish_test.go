package storageversion

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/etcd"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/storage"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// Regression (found by the safety suite: restarted servers lost their custom resource
// entries for good): a registry change seen while a custom resource is being
// published, tracked but not yet in the registry, must not untrack it, or its worker
// withdraws the entry Publish has just written.
func TestPublishSurvivesARegistryChange(t *testing.T) {
	ctx := t.Context()
	m, reg := runManager(t)
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
// storageversions resource.
func runManager(t *testing.T) (*Manager, *registry.Registry) {
	t.Helper()
	ctx := t.Context()
	member, err := etcd.StartLoopback(ctx, filepath.Join(t.TempDir(), "etcd"), etcd.WithUnsafeNoFsync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(member.Close)
	client, err := member.NewClient(ctx)
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
	m, err := NewManager(Config{ServerID: "s1", Registry: reg, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(stopped)
		_ = m.Run(runCtx)
	}()
	t.Cleanup(func() {
		cancel()
		<-stopped
	})
	if err := m.WaitFirstRound(ctx); err != nil {
		t.Fatal(err)
	}
	return m, reg
}
