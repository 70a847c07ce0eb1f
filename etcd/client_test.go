package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/test/tcpgate"
	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

func TestNewClientFailsFastOnDeadEndpoint(t *testing.T) {
	ports, err := reservePorts([]string{"127.0.0.1"}) // free, and nothing listens on it
	if err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("http://127.0.0.1:%d", ports[0])

	start := time.Now()
	c, err := NewClient(t.Context(), ClientConfig{Endpoints: []string{dead}, DialTimeout: 500 * time.Millisecond})
	if err == nil {
		_ = c.Close()
		t.Fatal("NewClient succeeded against a dead endpoint")
	}
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), dead) {
		t.Errorf("got %v, want ErrUnreachable naming %s", err, dead)
	}
	// It gives up rather than hanging (the bound is loose: a loaded machine is slow).
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Errorf("NewClient took %s with a 500ms dial timeout", elapsed)
	}
}

func TestNewClientMutualTLS(t *testing.T) {
	ca := newTestCA(t, "etcd")
	serverCert, serverKey := ca.issue("server")
	clientCert, clientKey := ca.issue("client")
	otherCA := newTestCA(t, "other")
	strangerCert, strangerKey := otherCA.issue("stranger")

	m, err := StartEmbedded(t.Context(), EmbeddedConfig{
		Name:             "tls",
		DataDir:          t.TempDir(),
		ListenClientURLs: []string{"https://127.0.0.1:0"},
		ListenPeerURLs:   []string{"http://127.0.0.1:0"},
		ClientTLS: TLSFiles{
			CertFile:       serverCert,
			KeyFile:        serverKey,
			TrustedCAFile:  ca.File,
			ClientCertAuth: true,
		},
		UnsafeNoFsync: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	if !strings.HasPrefix(m.Endpoints()[0], "https://127.0.0.1:") {
		t.Fatalf("endpoints %v, want https on 127.0.0.1", m.Endpoints())
	}

	cfg := m.ClientConfig()
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = ca.File, clientCert, clientKey
	c := newClient(t, cfg)
	mustPut(t, c, "/secure", "yes")
	if got := mustGet(t, c, "/secure"); got != "yes" {
		t.Errorf("Get /secure = %q", got)
	}

	refused := []struct {
		name                      string
		caFile, certFile, keyFile string
	}{
		{name: "no client certificate", caFile: ca.File},
		{name: "client certificate from another CA", caFile: ca.File, certFile: strangerCert, keyFile: strangerKey},
		{name: "server not trusted", caFile: otherCA.File, certFile: clientCert, keyFile: clientKey},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ClientConfig{Endpoints: m.Endpoints(), CAFile: tt.caFile, CertFile: tt.certFile, KeyFile: tt.keyFile, DialTimeout: 500 * time.Millisecond}
			c, err := NewClient(t.Context(), cfg)
			if err == nil {
				_ = c.Close()
				t.Fatal("NewClient succeeded")
			}
			if !errors.Is(err, ErrUnreachable) {
				t.Errorf("got %v, want ErrUnreachable", err)
			}
		})
	}
}

func TestNewClientRejectsUnreadableTLSFiles(t *testing.T) {
	_, err := NewClient(t.Context(), ClientConfig{Endpoints: []string{"https://127.0.0.1:2379"}, CAFile: "/does/not/exist.crt"})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("got %v, want ErrInvalidConfig", err)
	}
}

func TestClientConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     ClientConfig
		wantErr string // substring; empty means valid
	}{
		{name: "one http endpoint", cfg: ClientConfig{Endpoints: []string{"http://127.0.0.1:2379"}}},
		{name: "https cluster with mutual TLS", cfg: ClientConfig{Endpoints: []string{"https://a:2379", "https://b:2379"}, CAFile: "ca", CertFile: "c", KeyFile: "k"}},
		{name: "no endpoints", cfg: ClientConfig{}, wantErr: "--etcd-servers is empty"},
		{name: "no scheme", cfg: ClientConfig{Endpoints: []string{"127.0.0.1:2379"}}, wantErr: "want scheme://host:port with scheme http or https"},
		{name: "no port", cfg: ClientConfig{Endpoints: []string{"http://127.0.0.1"}}, wantErr: `--etcd-servers "http://127.0.0.1"`},
		{name: "port 0", cfg: ClientConfig{Endpoints: []string{"http://127.0.0.1:0"}}, wantErr: "--etcd-servers"},
		{name: "mixed schemes", cfg: ClientConfig{Endpoints: []string{"http://a:1", "https://b:1"}}, wantErr: "all http:// or all https://"},
		{name: "cert without key", cfg: ClientConfig{Endpoints: []string{"https://a:1"}, CertFile: "c"}, wantErr: "--etcd-certfile and --etcd-keyfile"},
		{name: "TLS files over http", cfg: ClientConfig{Endpoints: []string{"http://a:1"}, CAFile: "ca"}, wantErr: "need https://"},
		{name: "negative timeout", cfg: ClientConfig{Endpoints: []string{"http://a:1"}, DialTimeout: -time.Second}, wantErr: "dial timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate() = %v, want ErrInvalidConfig containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestClientConfigAddFlags(t *testing.T) {
	var cfg ClientConfig
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	cfg.AddFlags(fs)
	err := fs.Parse([]string{
		"--etcd-servers=https://10.0.0.1:2379,https://10.0.0.2:2379",
		"--etcd-cafile=ca.crt", "--etcd-certfile=client.crt", "--etcd-keyfile=client.key",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := ClientConfig{
		Endpoints: []string{"https://10.0.0.1:2379", "https://10.0.0.2:2379"},
		CAFile:    "ca.crt", CertFile: "client.crt", KeyFile: "client.key",
	}
	if !slices.Equal(cfg.Endpoints, want.Endpoints) || cfg.CAFile != want.CAFile || cfg.CertFile != want.CertFile || cfg.KeyFile != want.KeyFile {
		t.Errorf("parsed %+v, want %+v", cfg, want)
	}
}

// After an outage long enough for gRPC's default backoff to wait 25s and more
// between attempts (45s), the client reads again within reconnectBackoff's longest
// wait of etcd coming back, not at gRPC's next attempt.
func TestClientConnectsAgainSoonAfterAnOutage(t *testing.T) {
	t.Parallel()
	m, err := StartEmbedded(t.Context(), EmbeddedConfig{
		Name: "outage", DataDir: t.TempDir(), UnsafeNoFsync: true,
		ListenClientURLs: []string{"http://127.0.0.1:0"}, ListenPeerURLs: []string{"http://127.0.0.1:0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	g := tcpgate.New(t, m.Endpoints()...)
	c, err := NewClient(t.Context(), ClientConfig{Endpoints: []string{g.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g.Cut()
	time.Sleep(45 * time.Second) // the outage: the client retries to connect meanwhile
	g.Heal()
	back := time.Now()
	// One read, waiting for the connection (gRPC's wait-for-ready), bounded by the
	// longest wait between attempts, its jitter, and one attempt's handshakes.
	bound := time.Duration(float64(reconnectBackoff.MaxDelay)*(1+reconnectBackoff.Jitter)) + 5*time.Second
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	if _, err := c.Get(ctx, "outage", clientv3.WithCountOnly()); err != nil {
		t.Fatalf("no read within %v of etcd coming back: %v", bound, err)
	}
	t.Logf("read %v after etcd came back", time.Since(back))
}

// An endpoint that comes to lead to a member of another cluster (here a gate
// retargeted; in life a port reused) is refused: nothing the client asks reaches that
// cluster, and the client is back as soon as its own cluster answers there again.
func TestClientStaysWithTheClusterItFirstReached(t *testing.T) {
	t.Parallel()
	own, other := loopbackMember(t, "own"), loopbackMember(t, "other")
	g := tcpgate.New(t, own.Endpoints()...)
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	c, err := NewClient(klog.NewContext(t.Context(), logger), ClientConfig{Endpoints: []string{g.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	mustPut(t, c, "/before", "own")

	g.Cut()
	g.Retarget(t, other.Endpoints()...)
	g.Heal()
	// The client reconnects at once: once it has reached the other cluster, a write
	// could only go there.
	deadline := time.Now().Add(15 * time.Second)
	for g.Joined(other.Endpoints()[0]) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the client did not try its endpoint again within 15s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	_, err = c.Put(ctx, "/during", "lost")
	if err == nil {
		t.Fatal("a write reached the other cluster")
	}
	logged := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	if n := strings.Count(logged, "Refusing an etcd member of another cluster"); n != 1 {
		t.Errorf("the refusal logged %d times, want once:\n%s", n, logged)
	}
	if !strings.Contains(logged, "is of cluster "+other.clusterID(t)) {
		t.Errorf("the log does not name the other cluster %s:\n%s", other.clusterID(t), logged)
	}
	oc := newClient(t, other.ClientConfig())
	if resp, err := oc.Get(t.Context(), "/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil || resp.Count != 0 {
		t.Errorf("the other cluster holds %v keys (%v), want none", resp, err)
	}

	g.Cut()
	g.Retarget(t, own.Endpoints()...)
	g.Heal()
	ctx, cancel = context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "/after", "own"); err != nil {
		t.Fatalf("no write once the own cluster answered again: %v", err)
	}
	if got := mustGet(t, c, "/before"); got != "own" {
		t.Errorf("Get /before = %q, want own", got)
	}
}

// loopbackMember starts a single-member cluster of its own on free loopback ports.
func loopbackMember(t *testing.T, name string) *Embedded {
	t.Helper()
	m, err := StartEmbedded(t.Context(), EmbeddedConfig{
		Name: name, DataDir: t.TempDir(), UnsafeNoFsync: true,
		ListenClientURLs: []string{"http://127.0.0.1:0"}, ListenPeerURLs: []string{"http://127.0.0.1:0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// clusterID is the member's cluster ID as the refusal prints it.
func (m *Embedded) clusterID(t *testing.T) string {
	t.Helper()
	c := newClient(t, m.ClientConfig())
	resp, err := c.Get(t.Context(), "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", resp.Header.ClusterId)
}

// The pin checks a member over TLS whenever the endpoints are https, with the client's
// files or, without them, the system roots, as the client itself connects.
func TestClusterPinSpeaksTheEndpointsScheme(t *testing.T) {
	for _, tc := range []struct {
		cfg  ClientConfig
		want string
	}{
		{ClientConfig{Endpoints: []string{"http://127.0.0.1:2379"}}, "insecure"},
		{ClientConfig{Endpoints: []string{"https://etcd.example:2379"}}, "tls"},
		{ClientConfig{Endpoints: []string{"HTTPS://etcd.example:2379"}}, "tls"},
	} {
		tlsCfg, err := tc.cfg.tlsConfig()
		if err != nil {
			t.Fatal(err)
		}
		p := newClusterPin(tc.cfg.https(), tlsCfg, klog.Background())
		if got := p.creds.Info().SecurityProtocol; got != tc.want {
			t.Errorf("%s: the pin speaks %s, want %s", tc.cfg.Endpoints[0], got, tc.want)
		}
	}
}
