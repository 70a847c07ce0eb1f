package etcd

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// startLoopback starts a loopback member for one test and closes it at the end.
func startLoopback(t *testing.T, dataDir string) *Embedded {
	t.Helper()
	m, err := StartLoopback(t.Context(), dataDir, WithUnsafeNoFsync())
	if err != nil {
		t.Fatalf("StartLoopback: %v", err)
	}
	t.Cleanup(m.Close)
	return m
}

// newClient connects to cfg and closes the client at the end of the test.
func newClient(t *testing.T, cfg ClientConfig) *clientv3.Client {
	t.Helper()
	c, err := NewClient(t.Context(), cfg)
	if err != nil {
		t.Fatalf("NewClient(%v): %v", cfg.Endpoints, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func mustGet(t *testing.T, c *clientv3.Client, key string) string {
	t.Helper()
	resp, err := c.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get %q: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("Get %q: %d values, want 1", key, len(resp.Kvs))
	}
	return string(resp.Kvs[0].Value)
}

func mustPut(t *testing.T, c *clientv3.Client, key, value string) {
	t.Helper()
	if _, err := c.Put(t.Context(), key, value); err != nil {
		t.Fatalf("Put %q: %v", key, err)
	}
}

func TestLoopbackServesOnLoopbackOnly(t *testing.T) {
	m := startLoopback(t, t.TempDir())

	for _, urls := range [][]string{m.Endpoints(), m.PeerURLs()} {
		if len(urls) != 1 {
			t.Fatalf("got URLs %v, want exactly one", urls)
		}
		u, err := url.Parse(urls[0])
		if err != nil {
			t.Fatal(err)
		}
		if u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Port() == "0" {
			t.Errorf("URL %s: want http://127.0.0.1 with a picked port", u)
		}
	}
	if m.Endpoints()[0] == m.PeerURLs()[0] {
		t.Errorf("client and peer share %s", m.Endpoints()[0])
	}

	c := newClient(t, m.ClientConfig())
	mustPut(t, c, "/a", "1")
	if got := mustGet(t, c, "/a"); got != "1" {
		t.Errorf("Get /a = %q, want 1", got)
	}
}

func TestLoopbackRestartKeepsIdentityAndData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd") // does not exist yet: StartLoopback creates it
	first, err := StartLoopback(t.Context(), dir, WithUnsafeNoFsync())
	if err != nil {
		t.Fatal(err)
	}
	c, err := first.NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, c, "/kept", "across restarts")
	_ = c.Close()
	id := first.MemberID()
	first.Close()

	second := startLoopback(t, dir)
	if second.MemberID() != id {
		t.Errorf("member ID after restart = %x, want %x", second.MemberID(), id)
	}
	c = newClient(t, second.ClientConfig())
	if got := mustGet(t, c, "/kept"); got != "across restarts" {
		t.Errorf("Get /kept after restart = %q", got)
	}
	members, err := c.MemberList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(members.Members) != 1 {
		t.Fatalf("got %d members, want 1", len(members.Members))
	}
	if got, want := members.Members[0].PeerURLs, second.PeerURLs(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("member list peer URLs = %v, want the restarted member's %v", got, want)
	}
	if got, want := members.Members[0].ClientURLs, second.Endpoints(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("member list client URLs = %v, want %v", got, want)
	}
}

func TestEmbeddedCloseIsIdempotentAndClosesErr(t *testing.T) {
	m, err := StartLoopback(t.Context(), t.TempDir(), WithUnsafeNoFsync())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(m.Close)
	}
	wg.Wait()
	m.Close()
	if err, open := <-m.Err(); open || err != nil {
		t.Errorf("Err() after Close: got (%v, open=%v), want a closed channel", err, open)
	}
	if _, err := NewClient(t.Context(), ClientConfig{Endpoints: m.Endpoints(), DialTimeout: 300 * time.Millisecond}); !errors.Is(err, ErrUnreachable) {
		t.Errorf("NewClient after Close: got %v, want ErrUnreachable", err)
	}
}

func TestEmbeddedErrReportsUnexpectedStop(t *testing.T) {
	m := startLoopback(t, t.TempDir())
	m.etcd.Server.HardStop() // as a fatal raft or disk error would

	select {
	case err := <-m.Err():
		if !errors.Is(err, ErrStopped) {
			t.Errorf("Err() = %v, want ErrStopped", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Err() reported nothing after the server stopped")
	}
}

func TestStartEmbeddedThreeMemberCluster(t *testing.T) {
	ports, err := reservePorts(slices.Repeat([]string{"127.0.0.1"}, 6))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"a", "b", "c"}
	var initial []string
	for i, name := range names {
		initial = append(initial, fmt.Sprintf("%s=http://127.0.0.1:%d", name, ports[2*i+1]))
	}
	dir := t.TempDir()
	members := make([]*Embedded, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			members[i], errs[i] = StartEmbedded(t.Context(), EmbeddedConfig{
				Name:                name,
				DataDir:             filepath.Join(dir, name),
				ListenClientURLs:    []string{fmt.Sprintf("http://127.0.0.1:%d", ports[2*i])},
				ListenPeerURLs:      []string{fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])},
				InitialCluster:      strings.Join(initial, ","),
				InitialClusterToken: t.Name(),
				UnsafeNoFsync:       true,
				ReadyTimeout:        15 * time.Second,
			})
		})
	}
	wg.Wait()
	var endpoints []string
	for i, m := range members {
		if m != nil {
			t.Cleanup(m.Close) // one after another: see Embedded.Close
			endpoints = append(endpoints, m.Endpoints()...)
		}
		if errs[i] != nil {
			t.Errorf("member %s: %v", names[i], errs[i])
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	c := newClient(t, ClientConfig{Endpoints: endpoints})
	mustPut(t, c, "/replicated", "yes")
	list, err := c.MemberList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Members) != 3 {
		t.Errorf("member list has %d members, want 3", len(list.Members))
	}
	// A linearizable read through each member alone sees the write.
	for i, m := range members {
		one := newClient(t, m.ClientConfig())
		if got := mustGet(t, one, "/replicated"); got != "yes" {
			t.Errorf("member %s: Get /replicated = %q", names[i], got)
		}
	}
}

func TestStartEmbeddedTimesOutWithoutQuorum(t *testing.T) {
	// The second member of the initial cluster never starts, so no leader is elected.
	ports, err := reservePorts(slices.Repeat([]string{"127.0.0.1"}, 3))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	m, err := StartEmbedded(t.Context(), EmbeddedConfig{
		Name:             "lonely",
		DataDir:          t.TempDir(),
		ListenClientURLs: []string{fmt.Sprintf("http://127.0.0.1:%d", ports[0])},
		ListenPeerURLs:   []string{fmt.Sprintf("http://127.0.0.1:%d", ports[1])},
		InitialCluster:   fmt.Sprintf("lonely=http://127.0.0.1:%d,absent=http://127.0.0.1:%d", ports[1], ports[2]),
		UnsafeNoFsync:    true,
		ReadyTimeout:     500 * time.Millisecond,
	})
	if err == nil {
		m.Close()
		t.Fatal("StartEmbedded succeeded without a quorum")
	}
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "lonely") {
		t.Errorf("got %v, want ErrNotReady naming the member", err)
	}
	if elapsed := time.Since(start); elapsed > 30*time.Second { // gives up rather than hanging
		t.Errorf("StartEmbedded took %s to give up", elapsed)
	}
	// Nothing is left listening.
	if _, err := NewClient(t.Context(), ClientConfig{Endpoints: []string{fmt.Sprintf("http://127.0.0.1:%d", ports[0])}, DialTimeout: 200 * time.Millisecond}); err == nil {
		t.Error("the member still serves after StartEmbedded failed")
	}
}

func TestStartEmbeddedPicksPortsForPortZero(t *testing.T) {
	m, err := StartEmbedded(t.Context(), EmbeddedConfig{
		Name:                "zero",
		DataDir:             t.TempDir(),
		ListenClientURLs:    []string{"http://0.0.0.0:0"},
		AdvertiseClientURLs: []string{"http://127.0.0.1:2379"}, // published only
		ListenPeerURLs:      []string{"http://127.0.0.1:0"},
		InitialCluster:      "zero=http://127.0.0.1:0",
		UnsafeNoFsync:       true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	u, err := url.Parse(m.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	if u.Hostname() != "127.0.0.1" || u.Port() == "0" {
		t.Errorf("endpoint %s: want the wildcard listener reached through 127.0.0.1 on a picked port", u)
	}
	c := newClient(t, m.ClientConfig())
	list, err := c.MemberList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := list.Members[0].PeerURLs; fmt.Sprint(got) != fmt.Sprint(m.PeerURLs()) || strings.HasSuffix(got[0], ":0") {
		t.Errorf("published peer URLs %v, want the picked %v", got, m.PeerURLs())
	}
	if got := list.Members[0].ClientURLs; fmt.Sprint(got) != "[http://127.0.0.1:2379]" {
		t.Errorf("published client URLs %v, want the advertised ones", got)
	}
}

func TestEmbeddedConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     EmbeddedConfig
		wantErr string // substring; empty means valid
	}{
		{name: "zero value", cfg: EmbeddedConfig{}},
		{name: "loopback with port 0", cfg: EmbeddedConfig{ListenClientURLs: []string{"http://127.0.0.1:0"}, ListenPeerURLs: []string{"http://127.0.0.1:0"}}},
		{name: "unix client socket", cfg: EmbeddedConfig{ListenClientURLs: []string{"unix://localhost:1234"}}},
		{name: "not a URL", cfg: EmbeddedConfig{ListenClientURLs: []string{"::nope"}}, wantErr: "--listen-client-urls"},
		{name: "missing port", cfg: EmbeddedConfig{ListenClientURLs: []string{"http://127.0.0.1"}}, wantErr: "want scheme://ip:port"},
		{name: "bind to a host name", cfg: EmbeddedConfig{ListenPeerURLs: []string{"http://example.com:2380"}}, wantErr: "--listen-peer-urls"},
		{name: "ftp scheme", cfg: EmbeddedConfig{AdvertiseClientURLs: []string{"ftp://a:1"}}, wantErr: "with scheme http, https, unix or unixs"},
		{name: "unix peer", cfg: EmbeddedConfig{ListenPeerURLs: []string{"unix://localhost:1"}}, wantErr: "with scheme http or https"},
		{name: "path in URL", cfg: EmbeddedConfig{InitialAdvertisePeerURLs: []string{"http://a:1/x"}}, wantErr: "--initial-advertise-peer-urls"},
		{name: "wildcard without advertise", cfg: EmbeddedConfig{ListenClientURLs: []string{"http://0.0.0.0:2379"}}, wantErr: "--advertise-client-urls is required"},
		{name: "wildcard with advertise", cfg: EmbeddedConfig{ListenClientURLs: []string{"http://0.0.0.0:2379"}, AdvertiseClientURLs: []string{"http://10.0.0.1:2379"}}},
		{name: "advertised port 0 repeats no listen URL", cfg: EmbeddedConfig{InitialAdvertisePeerURLs: []string{"http://127.0.0.1:0"}}, wantErr: "has port 0"},
		{name: "https without cert", cfg: EmbeddedConfig{ListenClientURLs: []string{"https://127.0.0.1:2379"}}, wantErr: "needs --cert-file"},
		{name: "cert without key", cfg: EmbeddedConfig{PeerTLS: TLSFiles{CertFile: "c"}}, wantErr: "--peer-cert-file and --peer-key-file"},
		{name: "client cert auth without CA", cfg: EmbeddedConfig{ClientTLS: TLSFiles{ClientCertAuth: true}}, wantErr: "needs --trusted-ca-file"},
		{name: "initial cluster without this member", cfg: EmbeddedConfig{Name: "x", InitialCluster: "y=http://127.0.0.1:2380"}, wantErr: `does not list this member's --name "x"`},
		{name: "malformed initial cluster", cfg: EmbeddedConfig{InitialCluster: "default"}, wantErr: "name=scheme://host:port"},
		{name: "bad cluster state", cfg: EmbeddedConfig{InitialClusterState: "maybe"}, wantErr: `want "new" or "existing"`},
		{name: "negative quota", cfg: EmbeddedConfig{QuotaBackendBytes: -1}, wantErr: "--quota-backend-bytes"},
		{name: "bad compaction mode", cfg: EmbeddedConfig{AutoCompactionMode: "hourly"}, wantErr: "want one of periodic, revision"},
		{name: "periodic retention duration", cfg: EmbeddedConfig{AutoCompactionRetention: "30m"}},
		{name: "revision retention duration", cfg: EmbeddedConfig{AutoCompactionMode: "revision", AutoCompactionRetention: "30m"}, wantErr: "want a number of revisions"},
		{name: "bad log level", cfg: EmbeddedConfig{LogLevel: "loud"}, wantErr: "want one of debug, info, warn, error, panic, fatal"},
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
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}
