package hostile

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/test/binary"
	"github.com/concordproject/concord/test/kubepeer"
	"github.com/concordproject/concord/test/logbuf"
	"github.com/concordproject/concord/test/ports"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

var rewrite = flag.Bool("rewrite", false, "run the cases against a kube-apiserver peer and rewrite testdata/kube-<release>.json")

// peerRelease is the kube-apiserver release the recording comes from; Concord's
// binary is built against the same release.
const peerRelease = "1.37.2"

// requestTimeout is the --request-timeout of the servers that stalled requests are
// sent to (and of the kube-apiserver peer): short, so that they are answered within
// the test. Other requests go to servers with the default, a minute, so that a
// request that is merely slow on a loaded machine is not cut short.
const requestTimeout = 5 * time.Second

// concordBinary is the concord binary of this checkout (see test/binary), which
// TestMain finds or builds.
var concordBinary string

func TestMain(m *testing.M) {
	flag.Parse()
	var err error
	if concordBinary, err = binary.Concord(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// target is a running API server the cases are sent to.
type target struct {
	name string
	cfg  *rest.Config
	// client sends requests as the admin (a bearer token in system:masters).
	client *http.Client
	// tls and token are what a raw connection needs to speak as the admin.
	tls   *tls.Config
	token string
	host  string // host:port
	// pid and dataDir are the server's process and --data-dir (concord only).
	pid     int
	dataDir string
}

// startConcord runs the concord binary with an embedded etcd until the test ends.
func startConcord(t *testing.T, args ...string) *target {
	t.Helper()
	dir := t.TempDir()
	port := ports.Free(t)
	args = append([]string{"server", "--data-dir", dir, "--secure-port", strconv.Itoa(port), "--etcd-unsafe-no-fsync"}, args...)
	cmd := exec.Command(concordBinary, args...)
	logs := &logbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("concord's log:\n%s", logs.Tail(200))
		}
	})
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	waitFor(t, 60*time.Second, func() bool {
		select {
		case <-done:
			t.Fatalf("concord exited before it was ready:\n%s", logs.Tail(50))
		default:
		}
		_, err := os.Stat(kubeconfig)
		return err == nil
	})
	tg := newTarget(t, "concord", kubeconfig)
	tg.pid, tg.dataDir = cmd.Process.Pid, dir
	tg.waitReady(t)
	return tg
}

// startPeer runs kube-apiserver of peerRelease on an etcd of its own, with more
// flags, until the test ends.
func startPeer(t *testing.T, args ...string) *target {
	t.Helper()
	bin, err := kubepeer.Binary("kube-apiserver", peerRelease)
	if err != nil {
		t.Fatal(err)
	}
	cli := etcdtest.Start(t)
	logs := &logbuf.Buffer{}
	p, err := kubepeer.Start(t.Context(), kubepeer.Options{Binary: bin, Dir: t.TempDir(), EtcdServers: cli.Endpoints(),
		Args: args, Log: logs})
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.Tail(50))
	}
	t.Cleanup(p.Stop)
	tg := newTarget(t, "kube-apiserver", p.Kubeconfig)
	tg.waitReady(t)
	return tg
}

func newTarget(t *testing.T, name, kubeconfig string) *target {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tlsConf, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &target{name: name, cfg: cfg, client: client, tls: tlsConf, token: cfg.BearerToken,
		host: strings.TrimPrefix(cfg.Host, "https://")}
}

func (tg *target) waitReady(t *testing.T) {
	t.Helper()
	waitFor(t, 90*time.Second, func() bool {
		resp, err := tg.do(t.Context(), http.MethodGet, "/readyz", nil, nil)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// do sends a request as the admin.
func (tg *target) do(ctx context.Context, method, path string, header http.Header, body []byte) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, tg.cfg.Host+path, r)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return tg.client.Do(req)
}

// dial opens a raw TLS connection to the server, speaking HTTP/1.1.
func (tg *target) dial(t *testing.T) net.Conn {
	t.Helper()
	conf := tg.tls.Clone()
	conf.NextProtos = []string{"http/1.1"}
	conn, err := tls.Dial("tcp", tg.host, conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// waitFor polls cond every 100 ms until it holds, failing the test after limit.
func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not so after %v", limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
