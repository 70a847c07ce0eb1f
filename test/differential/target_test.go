package differential

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// serviceRange is the Services' cluster IP range of both servers (kubepeer's).
const serviceRange = "10.96.0.0/16"

// concordBinary is the concord binary of this checkout (see test/binary), which
// TestMain finds or builds ("" with -rewrite, which needs none).
var concordBinary string

func TestMain(m *testing.M) {
	flagsParse()
	if !*rewrite {
		var err error
		if concordBinary, err = binary.Concord(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// target is a running API server the cases are sent to.
type target struct {
	name string
	cfg  *rest.Config
	// client sends requests as the admin (a bearer token in system:masters).
	client *http.Client
}

// startConcord runs the concord binary with an embedded etcd until the test ends.
func startConcord(t *testing.T, args ...string) *target {
	t.Helper()
	dir := t.TempDir()
	// The requests go as the user the peer's token file names (kubepeer): admin, uid
	// admin, in system:masters; the answers that name the caller then agree.
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(adminToken+`,admin,admin,"system:masters"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args = append([]string{"server", "--data-dir", dir, "--secure-port", strconv.Itoa(ports.Free(t)),
		"--etcd-unsafe-no-fsync", "--service-cluster-ip-range", serviceRange, "--token-auth-file", tokens}, args...)
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
			t.Logf("concord's log:\n%s", logs.Tail(100))
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
	tg.cfg.CertData, tg.cfg.KeyData, tg.cfg.CertFile, tg.cfg.KeyFile = nil, nil, "", ""
	tg.cfg.BearerToken = adminToken
	client, err := rest.HTTPClientFor(tg.cfg)
	if err != nil {
		t.Fatal(err)
	}
	tg.client = client
	tg.waitReady(t)
	return tg
}

// adminToken is the bearer token of the admin on Concord.
const adminToken = "differential-admin"

// startPeer runs kube-apiserver of peerRelease on an etcd of its own, with more
// flags, until the test ends; it skips the test when the peer is not built.
func startPeer(t *testing.T, args ...string) *target {
	t.Helper()
	bin, err := kubepeer.Binary("kube-apiserver", peerRelease)
	if err != nil {
		t.Skipf("cannot re-record: %v", err)
	}
	cli := etcdtest.Start(t)
	logs := &logbuf.Buffer{}
	p, err := kubepeer.Start(t.Context(), kubepeer.Options{Binary: bin, Dir: t.TempDir(), EtcdServers: cli.Endpoints(),
		Args: args, Log: logs})
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.Tail(50))
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("kube-apiserver's log:\n%s", logs.Tail(60))
		}
	})
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
	return &target{name: name, cfg: cfg, client: client}
}

func (tg *target) waitReady(t *testing.T) {
	t.Helper()
	waitFor(t, 90*time.Second, func() bool {
		resp, err := tg.do(t.Context(), http.MethodGet, "/readyz", "", nil)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// do sends a request as the admin, with a fixed User-Agent (the field manager of
// writes that name none).
func (tg *target) do(ctx context.Context, method, path, ctype string, body []byte) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, tg.cfg.Host+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "differential")
	req.Header.Set("Accept", "application/json")
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	return tg.client.Do(req)
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
