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

	"github.com/concordproject/concord/test/ports"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/keyutil"
)

// ErrNotBuilt is returned by Binary when build.sh has not built the part yet.
var ErrNotBuilt = errors.New("not built")

// Binary returns the path where build.sh keeps a part ("kube-apiserver",
// "e2e-apimachinery", "sample-apiserver" or "helm") of a release, or ErrNotBuilt with the
// command that builds it.
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
	// Aggregation readies the peer's aggregator for aggregated API servers run beside
	// it (see StartSample): a client CA, a front-proxy CA and client certificate, the
	// flags that publish them in kube-system/extension-apiserver-authentication, and
	// --enable-aggregator-routing, which proxies to an address of a Service's
	// EndpointSlices rather than to its ClusterIP (no kube-proxy runs). EndpointSlices
	// may not name loopback addresses: see HostIP.
	Aggregation bool
	// Args are more kube-apiserver flags, e.g. --emulated-version=1.36; they come
	// last, so they override.
	Args []string
	// Port is the secure port (0: a free one).
	Port int
	// Tokens are more lines of the token file (token,user,uid[,"group,..."]) beside
	// the admin's.
	Tokens []string
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
	p, args, err := Prepare(o)
	if err != nil {
		return nil, err
	}
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

// Prepare writes what a peer of o needs into o.Dir (keys, token file, kubeconfig)
// and returns the peer, not started, with the arguments of its kube-apiserver: for
// callers that run the process themselves (Start runs it).
func Prepare(o Options) (*Peer, []string, error) {
	if err := writeCredentials(o.Dir, o.Tokens); err != nil {
		return nil, nil, err
	}
	port := o.Port
	if port == 0 {
		var err error
		if port, err = ports.Take(); err != nil {
			return nil, nil, err
		}
	}
	p := &Peer{URL: "https://127.0.0.1:" + strconv.Itoa(port), Kubeconfig: filepath.Join(o.Dir, "admin.kubeconfig"), done: make(chan error, 1)}
	if err := writeKubeconfig(p.Kubeconfig, p.URL); err != nil {
		return nil, nil, err
	}
	prefix := o.EtcdPrefix
	if prefix == "" {
		prefix = "/registry"
	}
	args := []string{
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
	}
	if o.Aggregation {
		more, err := aggregationArgs(filepath.Join(o.Dir, "pki"))
		if err != nil {
			return nil, nil, err
		}
		args = append(args, more...)
	}
	return p, append(args, o.Args...), nil
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
	return waitReady(ctx, "kube-apiserver", 2*time.Minute, p.done, func(ctx context.Context) bool {
		return readyz(ctx, client, p.URL, adminToken)
	})
}

// waitReady calls ready every 200 ms until it answers true, the process whose Wait
// result done receives exits (the result is put back for Stop), or limit passes.
func waitReady(ctx context.Context, name string, limit time.Duration, done chan error, ready func(context.Context) bool) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for !ready(ctx) {
		select {
		case err := <-done:
			done <- err
			return fmt.Errorf("%s exited before it was ready: %w", name, err)
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w", name, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// readyz tells whether url's /readyz answers 200 "ok"; token, if set, is sent as a
// bearer token.
func readyz(ctx context.Context, client *http.Client, url, token string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
	if err != nil {
		return false
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK && bytes.Equal(body, []byte("ok"))
}

// writeCredentials writes the service-account key and the token file: the admin's
// token and more lines.
func writeCredentials(dir string, more []string) error {
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
	for _, line := range more {
		tokens += line + "\n"
	}
	return os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(tokens), 0o600)
}

// FrontProxyClient is the common name of the client certificate with which the
// aggregator of a peer started with Options.Aggregation proxies to aggregated API
// servers; they find it in requestheader-allowed-names.
const FrontProxyClient = "front-proxy-client"

// aggregationArgs writes a client CA, the front-proxy CA and the front-proxy client
// certificate into pki and returns the flags that use them. No client presents a
// certificate of the client CA: it is there so that the ConfigMap has the
// client-ca-file that aggregated API servers look for (and log errors without).
func aggregationArgs(pki string) ([]string, error) {
	clientCA, err := newAuthority("client-ca")
	if err != nil {
		return nil, err
	}
	ca, err := newAuthority("front-proxy-ca")
	if err != nil {
		return nil, err
	}
	clientCAFile, caFile := filepath.Join(pki, "client-ca.crt"), filepath.Join(pki, "front-proxy-ca.crt")
	client := filepath.Join(pki, "front-proxy-client")
	if err := errors.Join(os.WriteFile(clientCAFile, clientCA.pem, 0o600), os.WriteFile(caFile, ca.pem, 0o600)); err != nil {
		return nil, err
	}
	if err := ca.issue(client, FrontProxyClient, nil); err != nil {
		return nil, err
	}
	return []string{
		"--client-ca-file=" + clientCAFile,
		"--requestheader-client-ca-file=" + caFile,
		"--requestheader-allowed-names=" + FrontProxyClient,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + client + ".crt",
		"--proxy-client-key-file=" + client + ".key",
		"--enable-aggregator-routing=true",
	}, nil
}

func writeKubeconfig(path, url string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["peer"] = &clientcmdapi.Cluster{Server: url, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: adminToken}
	cfg.Contexts["peer"] = &clientcmdapi.Context{Cluster: "peer", AuthInfo: "admin"}
	cfg.CurrentContext = "peer"
	return clientcmd.WriteToFile(*cfg, path)
}

// freePort returns a port of ip that was free a moment ago: ports.Take's on the
// loopback address.
func freePort(ip string) (int, error) {
	if ip == "127.0.0.1" {
		return ports.Take()
	}
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
