package upgradecheck

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/concordproject/concord/catalog"
	"k8s.io/apimachinery/pkg/util/version"
)

// TestRecordedClusters checks what upgrade-check reads of real clusters, recorded by
// test/kubepeer (TestUpgradeCheckOnKubeAPIServer -rewrite): on a healthy kube-apiserver
// cluster with Concord's controller-manager, the release running is safe, every hash
// it publishes is resolved (CustomResourceDefinitions stored in v1beta1 included), the
// resources this build does not know are unverified, not blocked, and a release newer
// than the catalog is judged as the catalog's newest.
func TestRecordedClusters(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("testdata/clusters/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded clusters: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			rec, err := LoadClusterRecord(file)
			if err != nil {
				t.Fatal(err)
			}
			running := version.MustParseGeneric(rec.ServerVersion)
			obs, discovered := rec.Observed()
			for _, to := range []string{version.MajorMinor(running.Major(), running.Minor()).String(), cat.BinaryVersion().AddMinor(1).String()} {
				in, err := NewInput(t.Context(), cat, to, "", obs, discovered, rec.ServerVersion)
				if err != nil {
					t.Fatal(err)
				}
				r := Check(in)
				var out strings.Builder
				if err := r.Print(&out); err != nil {
					t.Fatal(err)
				}
				if err := r.Err(); err != nil || strings.Contains(out.String(), "hash ") {
					t.Errorf("--to-version %s: %v\n%s", to, err, out.String())
				}
				if !in.Fleet.Kube {
					t.Errorf("%s is not read as a kube-apiserver fleet", rec.ServerVersion)
				}
			}
		})
	}
}
