package kubepeer

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/keyutil"
)

// ErrNotBuilt is returned by Binary when build.sh has not built the part yet.
var ErrNotBuilt = errors.New("not built")

// Binary returns the path where build.sh keeps a part ("kube-apiserver" or
// "e2e-apimachinery") of a release, or ErrNotBuilt with the command that builds it.
func Binary(part, release string) (string, error) {
	dir := os.Getenv("CONCORD_PEER_CACHE")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(home, ".cache", "concord-peer")
	}
	name := part + "-" + release
	if part == "e2e-apimachinery" {
		name += ".test"
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s %s: %w (run test/kubepeer/build.sh %s %s)", part, release, ErrNotBuilt, part, release)
	}
	return path, nil
}

// Options say how to run a peer.
type Options struct {
	Binary      string   // a kube-apiserver binary
	Dir         string   // where its keys, certificates, token file and kubeconfig go
	EtcdServers []string // client URLs of its etcd
	EtcdPrefix  string   // default /registry
	// Args are more kube-apiserver flags, e.g. --emulated-version=1.36.
	Args []string
	// Log receives the process's output; nil discards it.
	Log io.Writer
}

// Peer is a running kube-apiserver.
type Peer struct {
	URL        string // https://127.0.0.1:<port>
	Kubeconfig string // admin kubeconfig (bearer token in system:masters)
	cmd        *exec.Cmd
	done       chan error
}

const adminToken = "concord-peer-admin"

// Start runs a kube-apiserver and returns once its /readyz answers 200.
func Start(ctx context.Context, o Options) (*Peer, error) {
	if err := writeCredentials(o.Dir); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &Peer{URL: "https://127.0.0.1:" + strconv.Itoa(port), Kubeconfig: filepath.Join(o.Dir, "admin.kubeconfig"), done: make(chan error, 1)}
	if err := writeKubeconfig(p.Kubeconfig, p.URL); err != nil {
		return nil, err
	}
	prefix := o.EtcdPrefix
	if prefix == "" {
		prefix = "/registry"
	}
	args := append([]string{
		"--etcd-servers=" + strings.Join(o.EtcdServers, ","), "--etcd-prefix=" + prefix,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(o.Dir, "pki"),
		"--token-auth-file=" + filepath.Join(o.Dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(o.Dir, "sa.key"),
		"--service-account-signing-key-file=" + filepath.Join(o.Dir, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		// No Service for the API server itself: it listens on loopback only.
		"--endpoint-reconciler-type=none",
	}, o.Args...)
	p.cmd = exec.Command(o.Binary, args...)
	out := o.Log
	if out == nil {
		out = io.Discard
	}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting kube-apiserver: %w", err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	if err := p.waitReady(ctx); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// Stop interrupts the peer and waits for it to exit (killing it after 30 seconds).
func (p *Peer) Stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *Peer) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the peer's self-signed certificate, on loopback
	}}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		if resp, err := client.Do(req); err == nil {
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK && bytes.Equal(body, []byte("ok")) {
				return nil
			}
		}
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("kube-apiserver exited before it was ready: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// writeCredentials writes the service-account key and the token file.
func writeCredentials(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "pki"), 0o700); err != nil {
		return err
	}
	key, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return err
	}
	if err := keyutil.WriteKey(filepath.Join(dir, "sa.key"), key); err != nil {
		return err
	}
	tokens := adminToken + `,admin,admin,"system:masters"` + "\n"
	return os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens), 0o600)
}

func writeKubeconfig(path, url string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["peer"] = &clientcmdapi.Cluster{Server: url, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: adminToken}
	cfg.Contexts["peer"] = &clientcmdapi.Context{Cluster: "peer", AuthInfo: "admin"}
	cfg.CurrentContext = "peer"
	return clientcmd.WriteToFile(*cfg, path)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
