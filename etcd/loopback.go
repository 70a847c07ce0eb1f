package etcd

import (
	"context"
	"fmt"
	"os"
	"slices"

	"k8s.io/klog/v2"
)

// LoopbackMemberName is the name of the member StartLoopback runs.
const LoopbackMemberName = "concord"

// LoopbackOption adjusts the configuration StartLoopback builds, after its defaults
// are set and before the member starts.
type LoopbackOption func(*EmbeddedConfig)

// WithUnsafeNoFsync turns off fsync: faster, and safe only for data a crash may lose,
// as in tests.
func WithUnsafeNoFsync() LoopbackOption {
	return func(c *EmbeddedConfig) { c.UnsafeNoFsync = true }
}

// WithLogLevel sets etcd's own log level (see EmbeddedConfig.LogLevel).
func WithLogLevel(level string) LoopbackOption {
	return func(c *EmbeddedConfig) { c.LogLevel = level }
}

// StartLoopback starts a single-member etcd that listens on free ports of 127.0.0.1
// only, for clients and for peers, and keeps its data in dataDir (created if missing).
//
// Ports are picked afresh on every start. Starting again on the same dataDir brings
// back the same member (same MemberID, same data); its advertised peer URL is then
// updated to the new port so that the cluster's member list stays true.
//
// Errors are those of StartEmbedded. The caller must Close the returned member.
func StartLoopback(ctx context.Context, dataDir string, opts ...LoopbackOption) (*Embedded, error) {
	if dataDir == "" {
		return nil, fmt.Errorf("%w: a loopback etcd needs a data directory", ErrInvalidConfig)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating etcd data directory: %w", err)
	}
	cfg := EmbeddedConfig{
		Name:             LoopbackMemberName,
		DataDir:          dataDir,
		ListenClientURLs: []string{"http://127.0.0.1:0"},
		ListenPeerURLs:   []string{"http://127.0.0.1:0"},
		// A single member on loopback has no peer latency to allow for; short raft
		// timers make a restart elect itself in tens of milliseconds instead of up
		// to a second.
		TickMs:     10,
		ElectionMs: 100,
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	m, err := StartEmbedded(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := m.refreshPeerURLs(ctx); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// refreshPeerURLs records the member's current peer URLs in the cluster membership
// when a restart moved them. The membership is only rewritten for a single-member
// cluster, where the member itself is the quorum that agrees.
func (m *Embedded) refreshPeerURLs(ctx context.Context) error {
	client, err := m.NewClient(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = client.Close() }()

	list, err := client.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("listing members of %q: %w", m.name, err)
	}
	if len(list.Members) != 1 || list.Members[0].ID != m.MemberID() {
		return nil
	}
	stored := slices.Sorted(slices.Values(list.Members[0].PeerURLs))
	if slices.Equal(stored, slices.Sorted(slices.Values(m.peerURLs))) {
		return nil
	}
	if _, err := client.MemberUpdate(ctx, m.MemberID(), m.peerURLs); err != nil {
		return fmt.Errorf("updating the peer URLs of %q from %v to %v: %w", m.name, stored, m.peerURLs, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated the loopback etcd member's peer URLs", "from", stored, "to", m.peerURLs)
	return nil
}
