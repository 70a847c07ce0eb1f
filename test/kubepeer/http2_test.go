package kubepeer_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/test/h2settings"
	"github.com/concordproject/concord/test/kubepeer"
	"golang.org/x/net/http2"
	"k8s.io/client-go/tools/clientcmd"
)

// kube-apiserver advertises at most 100 concurrent streams an HTTP/2 connection by
// default: the number test/integration's TestHTTP2StreamLimit holds Concord to.
func TestHTTP2SettingsOfKubeAPIServer(t *testing.T) {
	if os.Getenv("CONCORD_KUBEPEER") != "1" {
		t.Skip("CONCORD_KUBEPEER=1 runs it (after test/kubepeer/build.sh kube-apiserver " + release + ")")
	}
	bin, err := kubepeer.Binary("kube-apiserver", release)
	if err != nil {
		t.Fatal(err)
	}
	etcd := etcdtest.Start(t)
	var kubeLog bytes.Buffer
	p, err := kubepeer.Start(t.Context(), kubepeer.Options{Binary: bin, Dir: t.TempDir(), EtcdServers: etcd.Endpoints(), Log: &kubeLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	rc, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	settings, err := h2settings.Read(rc)
	if err != nil {
		t.Fatal(err)
	}
	if got := settings[http2.SettingMaxConcurrentStreams]; got != 100 {
		t.Errorf("kube-apiserver %s advertises SETTINGS_MAX_CONCURRENT_STREAMS %d, want 100", release, got)
	}
}
