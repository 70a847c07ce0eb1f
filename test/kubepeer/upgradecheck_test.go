package kubepeer_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd/etcdtest"
	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/test/kubepeer"
	"github.com/concordproject/concord/upgradecheck"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// `concord upgrade-check` on real kube-apiserver clusters (release and
// olderReleases, 1.34 to 1.37) with Concord's controller-manager installed: once every
// StorageState has settled, the release running is safe (exit 0), every hash kube
// publishes is resolved (CustomResourceDefinitions stored in apiextensions.k8s.io/v1beta1
// included), resources this build's catalog does not know are named unverified (not
// warnings, not blocks), and a release newer than the catalog is answered for what the
// catalog knows, not refused. What the check read is recorded in
// upgradecheck/testdata/clusters (-rewrite), which the ordinary suite checks without a
// peer (TestRecordedClusters, package upgradecheck).
func TestUpgradeCheckOnKubeAPIServer(t *testing.T) {
	if os.Getenv("CONCORD_KUBEPEER") != "1" {
		t.Skip("CONCORD_KUBEPEER=1 runs it (after test/kubepeer/build.sh kube-apiserver " + release + ")")
	}
	for _, rel := range append([]string{release}, olderReleases...) {
		t.Run(rel, func(t *testing.T) {
			bin, err := kubepeer.Binary("kube-apiserver", rel)
			if errors.Is(err, kubepeer.ErrNotBuilt) && rel != release {
				t.Skip(err)
			}
			if err != nil {
				t.Fatal(err)
			}
			upgradeCheckOnKube(t, bin, rel)
		})
	}
}

// olderReleases are the kube-apiserver releases before release that the peer tests
// run when test/kubepeer/build.sh has built them.
var olderReleases = []string{"1.36.3", "1.35.4", "1.34.4"}

// upgradeCheckOnKube is TestUpgradeCheckOnKubeAPIServer on a kube-apiserver binary
// of release rel.
func upgradeCheckOnKube(t *testing.T, bin, rel string) {
	etcd := etcdtest.Start(t)
	dir := t.TempDir()
	var kubeLog bytes.Buffer
	p, err := kubepeer.Start(t.Context(), kubepeer.Options{Binary: bin, Dir: dir, EtcdServers: etcd.Endpoints(), Log: &kubeLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	stop := runControllerManager(t, p.Kubeconfig)
	defer stop()
	rc, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(rc)
	waitStatesSettled(t, dyn)

	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		cmd := upgradecheck.NewCommand()
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(append([]string{"--kubeconfig", p.Kubeconfig}, args...))
		err := cmd.ExecuteContext(t.Context())
		t.Logf("upgrade-check %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		return out.String(), err
	}
	out, err := run("--to-version", rel[:strings.LastIndex(rel, ".")])
	if err != nil {
		t.Errorf("upgrade-check to the release running: %v", err)
	}
	for _, bad := range []string{"hash ", "Warnings (not blocking)", "BLOCKED"} {
		if strings.Contains(out, bad) {
			t.Errorf("upgrade-check to the release running says %q", bad)
		}
	}
	if !strings.Contains(out, "customresourcedefinitions.apiextensions.k8s.io") || !strings.Contains(out, "pods ") {
		t.Errorf("the report lacks CustomResourceDefinitions or Pods")
	}
	// Newer than the catalog: answered for what it knows.
	out, err = run("--to-version", "1.38")
	if err != nil || !strings.Contains(out, "Release 1.38 is newer than this build knows") || !strings.Contains(out, "is safe as far as this build knows") {
		t.Errorf("upgrade-check to a release newer than the catalog: %v", err)
	}
	if *rewrite {
		record(t, rc, rel)
	}
}

var rewrite = flag.Bool("rewrite", false, "record what upgrade-check reads of the peer in upgradecheck/testdata/clusters, and its discovery in test/discoveryparity/testdata (TestRecordDiscovery)")

// record writes what upgrade-check reads of the cluster to
// upgradecheck/testdata/clusters/kube-<release>.json.
func record(t *testing.T, rc *rest.Config, rel string) {
	t.Helper()
	obs, err := upgradecheck.Read(t.Context(), dynamic.NewForConfigOrDie(rc))
	if err != nil {
		t.Fatal(err)
	}
	disc := discovery.NewDiscoveryClientForConfigOrDie(rc)
	info, err := disc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	discovered, err := upgradecheck.Discover(disc)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(upgradecheck.NewClusterRecord(obs, discovered, info.GitVersion), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "upgradecheck", "testdata", "clusters", "kube-"+rel+".json")
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitStatesSettled waits until there are StorageStates and each lists its current
// hash alone.
func waitStatesSettled(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	var pending []string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		list, err := dyn.Resource(migrationapi.StorageStates).List(t.Context(), metav1.ListOptions{})
		pending = nil
		if err == nil {
			for i := range list.Items {
				st, err := migrationapi.StateFrom(&list.Items[i])
				if err != nil {
					t.Fatal(err)
				}
				if c := st.Status.CurrentStorageVersionHash; c == "" || c == migrationapi.Unknown || !slices.Equal(st.Status.PersistedStorageVersionHashes, []string{c}) {
					pending = append(pending, st.Name)
				}
			}
		}
		if err == nil && len(list.Items) > 0 && len(pending) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("StorageStates not settled after 3m: %v (%v)", pending, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
