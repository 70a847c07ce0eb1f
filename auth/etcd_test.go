package auth

import (
	"net/url"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// startEtcd runs a single-member etcd in t.TempDir() on free loopback ports and returns a
// client for it; both are closed when the test ends.
func startEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = "error"
	loopback := func() []url.URL { return []url.URL{{Scheme: "http", Host: "127.0.0.1:0"}} }
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = loopback(), loopback()
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = loopback(), loopback()
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd failed: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("etcd did not become ready in 30s")
	}

	client, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"http://" + e.Clients[0].Addr().String()},
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatalf("connecting to etcd: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}
