package integration

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/harness"
	"github.com/concordproject/concord/test/discoveryparity"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// ownResources are the resources Concord serves on purpose where kube-apiserver does not.
var ownResources = []discoveryparity.Own{
	{GroupVersion: "compatibility.concord.io/v1alpha1", Resource: "versionskews",
		Reason: "Concord's version-skew API: the releases of the fleet and whether their skew is allowed (package versionskew)"},
	{GroupVersion: "internal.apiserver.k8s.io/v1alpha1", Resource: "storageversions",
		Reason: "Concord turns StorageVersionAPI on by default and serves its API with it; kube leaves the alpha API off (docs/compatibility.md, API availability)"},
	{GroupVersion: "storagemigration.k8s.io/v1", Resource: "storageversionmigrations",
		Reason: "every Concord release serves the migration API in v1 and v1beta1 whatever its emulation version, so mixed fleets agree on it (docs/compatibility.md)"},
	{GroupVersion: "storagemigration.k8s.io/v1beta1", Resource: "storageversionmigrations",
		Reason: "served beside v1 by every Concord release for clients of the beta API (docs/compatibility.md)"},
	{GroupVersion: "migration.k8s.io/v1alpha1", Resource: "storagestates",
		Reason: "Concord's storage migration life-cycle, a custom resource its migration controllers install at start (package migration)"},
}

// knownDifferences are the differences Concord is known to have, each with its reason: storage
// version hashes where Concord stores otherwise. Every one must happen: remove it
// when it no longer does.
var knownDifferences = []discoveryparity.Known{
	{GroupVersion: "apiextensions.k8s.io/v1", Resource: "customresourcedefinitions", Field: "storageVersionHash",
		Reason: "kube-apiserver still stores CustomResourceDefinitions as apiextensions.k8s.io/v1beta1; Concord stores them as v1 (package apiextensions)"},
	{GroupVersion: "storagemigration.k8s.io/v1", Resource: "storageversionmigrations", Field: "storageVersionHash", Emulation: "1.37",
		Reason: "kube-apiserver 1.37 stores v1beta1 (v1 is new in 1.37); Concord stores v1 in every release (docs/compatibility.md, TestStorageVersionMigrationsStoredAsV1)"},
}

// TestDiscoveryParity starts a Concord server at the emulation version of each
// recording in testdata and holds its discovery to what kube-apiserver listed there:
// every resource and version kube lists, and nothing else but Concord's own.
func TestDiscoveryParity(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "discoveryparity", "testdata", "kube-*-emulating-*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings in testdata (%v): CONCORD_KUBEPEER=1 go test ./test/kubepeer -run TestRecordDiscovery -args -rewrite", err)
	}
	for _, file := range files {
		kube, err := discoveryparity.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			c := harness.Start(t, 1, harness.WithStorageMigration(), harness.WithServerOptions(func(_ int, o *controlplane.Options) {
				o.Compatibility.EmulationVersion = []string{kube.EmulationVersion}
			}))
			cfg := c.Servers[0].Config()
			waitReadyz(t, cfg)
			// The migration controllers install StorageStates' definition at start,
			// after readiness: wait for it, or the comparison depends on timing.
			waitDiscovered(t, cfg, "migration.k8s.io/v1alpha1", "storagestates")
			info, err := discovery.NewDiscoveryClientForConfigOrDie(cfg).ServerVersion()
			if err != nil {
				t.Fatal(err)
			}
			got, err := discoveryparity.Read(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got.Server, got.EmulationVersion = "Concord "+info.GitVersion, kube.EmulationVersion
			rep := discoveryparity.Compare(kube, got, ownResources, knownDifferences)
			if rep.Empty() {
				t.Logf("%s", rep)
			} else {
				t.Errorf("Concord's discovery differs from kube-apiserver's:\n%s", rep)
			}
		})
	}
}

// waitReadyz waits until the server's /readyz answers ok: every post-start hook done
// (the CRD controller serving what is stored, local APIServices registered).
func waitReadyz(t *testing.T, cfg *rest.Config) {
	t.Helper()
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	deadline := time.Now().Add(time.Minute)
	for {
		body, err := dc.RESTClient().Get().AbsPath("/readyz").DoRaw(t.Context())
		if err == nil && string(body) == "ok" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready after a minute: %v %s", err, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitDiscovered waits until discovery lists resource in group version gv.
func waitDiscovered(t *testing.T, cfg *rest.Config, gv, resource string) {
	t.Helper()
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	deadline := time.Now().Add(time.Minute)
	for {
		list, err := dc.ServerResourcesForGroupVersion(gv)
		if err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == resource }) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s not served after a minute: %v", gv, resource, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
