package kubepeer_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/concordproject/concord/test/discoveryparity"
	"github.com/concordproject/concord/test/kubepeer"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
)

// TestRecordDiscovery records what kube-apiserver release lists in discovery, once at
// its own release and once emulating the one before, each on a fresh etcd, in
// test/discoveryparity/testdata (the ordinary suite holds Concord to it: test/integration's
// TestDiscoveryParity). It runs only to rewrite the recordings:
//
//	CONCORD_KUBEPEER=1 go test ./test/kubepeer -run TestRecordDiscovery -args -rewrite
func TestRecordDiscovery(t *testing.T) {
	if os.Getenv("CONCORD_KUBEPEER") != "1" || !*rewrite {
		t.Skip("CONCORD_KUBEPEER=1 and -args -rewrite run it (after test/kubepeer/build.sh kube-apiserver " + release + ")")
	}
	bin, err := kubepeer.Binary("kube-apiserver", release)
	if err != nil {
		t.Fatal(err)
	}
	own := release[:strings.LastIndex(release, ".")]
	for _, emulation := range []string{own, rollbackRelease[:strings.LastIndex(rollbackRelease, ".")]} {
		t.Run(emulation, func(t *testing.T) {
			var args []string
			if emulation != own {
				args = []string{"--emulated-version=" + emulation}
			}
			dir := t.TempDir()
			var kubeLog bytes.Buffer
			p, err := kubepeer.Start(t.Context(), kubepeer.Options{Binary: bin, Dir: dir, EtcdServers: startEtcd(t, dir, "etcd"), Args: args, Log: &kubeLog})
			if err != nil {
				t.Fatalf("%v\n%s", err, kubeLog.String())
			}
			defer p.Stop()
			rc, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
			if err != nil {
				t.Fatal(err)
			}
			info, err := discovery.NewDiscoveryClientForConfigOrDie(rc).ServerVersion()
			if err != nil {
				t.Fatal(err)
			}
			rec, err := discoveryparity.Read(rc)
			if err != nil {
				t.Fatal(err)
			}
			rec.Server, rec.EmulationVersion = "kube-apiserver "+info.GitVersion, emulation
			path := filepath.Join("..", "discoveryparity", "testdata", discoveryparity.RecordingName(release, emulation))
			if err := discoveryparity.Write(path, rec); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, g := range rec.Groups {
				for _, v := range g.Versions {
					n += len(v.Resources)
				}
			}
			t.Logf("recorded %d groups, %d discovery entries of %s emulating %s in %s", len(rec.Groups), n, info.GitVersion, emulation, path)
		})
	}
}
