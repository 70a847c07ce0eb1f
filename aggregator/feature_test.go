package aggregator_test

import (
	"testing"

	"github.com/concordproject/concord/aggregator"
	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/feature"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/informers"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/storage"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// TestFeature: a server that does not serve what the aggregator reads is no
// aggregator; one that does has its post-start hooks in kube-apiserver's order, then
// autoregister-completion, none of them passing before Start.
func TestFeature(t *testing.T) {
	ctx := t.Context()
	reg := registry.New()
	client := etcdtest.Start(t)
	st := store.NewStore(storage.New(client, "/registry"))
	cluster, err := auth.EnsureClusterCredentials(ctx, client, "/concord/credentials", "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := aggregator.FeatureConfig{Server: feature.Server{Registry: reg, Informers: informers.New(reg, st),
		Loopback: &rest.Config{Host: "https://127.0.0.1:1"}, ServerID: "apiserver-test"}, Cluster: cluster}
	if f, err := aggregator.NewFeature(cfg); f != nil || err != nil {
		t.Fatalf("NewFeature serving nothing: %v, %v; want nil, nil", f, err)
	}

	// What the aggregator reads, served in v1 (their schemas do not matter here).
	for _, gr := range []schema.GroupResource{aggregator.GroupResource, {Resource: "services"}, {Group: "discovery.k8s.io", Resource: "endpointslices"}} {
		res := &registry.Resource{Group: gr.Group, StorageVersion: "v1", Versions: []registry.Version{{Name: "v1", Served: true}},
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: gr.Resource, Kind: "Kind", ListKind: "KindList"}}
		if err := reg.Put(ctx, res); err != nil {
			t.Fatal(err)
		}
	}
	f, err := aggregator.NewFeature(cfg)
	if err != nil || f == nil {
		t.Fatalf("NewFeature: %v, %v", f, err)
	}
	want := []string{
		"poststarthook/start-cluster-authentication-info-controller", "poststarthook/start-kube-aggregator-informers",
		"poststarthook/apiservice-registration-controller", "poststarthook/apiservice-status-local-available-controller",
		"poststarthook/apiservice-status-remote-available-controller", "poststarthook/kube-apiserver-autoregistration",
		"poststarthook/apiservice-openapi-controller", "autoregister-completion",
	}
	checks := f.Checks()
	if len(checks) != len(want) {
		t.Fatalf("Checks: %d, want %d", len(checks), len(want))
	}
	for n, c := range checks {
		if c.Name() != want[n] {
			t.Errorf("check %d: %s, want %s", n, c.Name(), want[n])
		}
		if _, hook := c.(*health.PostStartHook); hook && c.Check(nil) == nil {
			t.Errorf("%s passes before Start", c.Name())
		}
	}
	if f.Aggregated() == nil || f.ServiceResolver() == nil {
		t.Fatal("an aggregator without its proxy or its resolver")
	}
}
