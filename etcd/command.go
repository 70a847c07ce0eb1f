package etcd

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/klog/v2"
)

// AddFlags binds c to etcd's own flag names: --name, --data-dir, the four URL lists,
// the three --initial-cluster flags, client and peer TLS, quota, auto-compaction,
// --unsafe-no-fsync and --log-level. The current values of c are the defaults.
func (c *EmbeddedConfig) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.Name, "name", c.Name, "Human-readable name of this member, unique in its cluster.")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, `Directory of this member's data; empty means "<name>.etcd".`)

	fs.StringSliceVar(&c.ListenClientURLs, "listen-client-urls", c.ListenClientURLs,
		"Comma-separated URLs (scheme://ip:port) to serve clients on; port 0 picks a free port.")
	fs.StringSliceVar(&c.AdvertiseClientURLs, "advertise-client-urls", c.AdvertiseClientURLs,
		"Comma-separated client URLs published to the cluster (default: --listen-client-urls).")
	fs.StringSliceVar(&c.ListenPeerURLs, "listen-peer-urls", c.ListenPeerURLs,
		"Comma-separated URLs (scheme://ip:port) to serve other members on; port 0 picks a free port.")
	fs.StringSliceVar(&c.InitialAdvertisePeerURLs, "initial-advertise-peer-urls", c.InitialAdvertisePeerURLs,
		"Comma-separated peer URLs published to the cluster (default: --listen-peer-urls).")

	fs.StringVar(&c.InitialCluster, "initial-cluster", c.InitialCluster,
		"Comma-separated name=peer-URL pairs of every member of a new cluster (default: this member alone).")
	fs.StringVar(&c.InitialClusterState, "initial-cluster-state", c.InitialClusterState,
		`"new" to bootstrap a cluster, "existing" to join one.`)
	fs.StringVar(&c.InitialClusterToken, "initial-cluster-token", c.InitialClusterToken,
		"Token that tells apart clusters bootstrapped from the same peer URLs.")

	fs.StringVar(&c.ClientTLS.CertFile, "cert-file", c.ClientTLS.CertFile, "PEM serving certificate for client URLs.")
	fs.StringVar(&c.ClientTLS.KeyFile, "key-file", c.ClientTLS.KeyFile, "PEM private key of --cert-file.")
	fs.StringVar(&c.ClientTLS.TrustedCAFile, "trusted-ca-file", c.ClientTLS.TrustedCAFile, "PEM certificate authorities that sign client certificates.")
	fs.BoolVar(&c.ClientTLS.ClientCertAuth, "client-cert-auth", c.ClientTLS.ClientCertAuth, "Require clients to present a certificate signed by --trusted-ca-file.")
	fs.StringVar(&c.PeerTLS.CertFile, "peer-cert-file", c.PeerTLS.CertFile, "PEM serving certificate for peer URLs.")
	fs.StringVar(&c.PeerTLS.KeyFile, "peer-key-file", c.PeerTLS.KeyFile, "PEM private key of --peer-cert-file.")
	fs.StringVar(&c.PeerTLS.TrustedCAFile, "peer-trusted-ca-file", c.PeerTLS.TrustedCAFile, "PEM certificate authorities that sign peer certificates.")
	fs.BoolVar(&c.PeerTLS.ClientCertAuth, "peer-client-cert-auth", c.PeerTLS.ClientCertAuth, "Require peers to present a certificate signed by --peer-trusted-ca-file.")

	fs.Int64Var(&c.QuotaBackendBytes, "quota-backend-bytes", c.QuotaBackendBytes, "Database size that raises an alarm and stops writes (0: etcd's default, 2 GiB).")
	fs.StringVar(&c.AutoCompactionMode, "auto-compaction-mode", c.AutoCompactionMode, `"periodic" or "revision".`)
	fs.StringVar(&c.AutoCompactionRetention, "auto-compaction-retention", c.AutoCompactionRetention,
		"History kept by auto-compaction: a duration or hours (periodic), revisions (revision); 0 turns it off.")
	fs.BoolVar(&c.UnsafeNoFsync, "unsafe-no-fsync", c.UnsafeNoFsync, "Never fsync: a crash may lose or corrupt data. For tests only.")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "etcd's log level: "+strings.Join(logLevels, ", ")+".")
}

// NewCommand returns `concord etcd`: one etcd member, configured with etcd's own flag
// names and defaults (except a quiet --log-level), running until SIGINT or SIGTERM or
// until the command's context ends, then stopping cleanly. A member of a new cluster
// waits for its peers for as long as it takes.
func NewCommand() *cobra.Command {
	cfg := &EmbeddedConfig{
		Name:                    embed.DefaultName,
		ListenClientURLs:        []string{embed.DefaultListenClientURLs},
		ListenPeerURLs:          []string{embed.DefaultListenPeerURLs},
		InitialClusterState:     ClusterStateNew,
		InitialClusterToken:     DefaultInitialClusterToken,
		AutoCompactionMode:      embed.DefaultAutoCompactionMode,
		AutoCompactionRetention: embed.DefaultAutoCompactionRetention,
		LogLevel:                DefaultLogLevel,
		ReadyTimeout:            -1,
	}
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Run one etcd member",
		Long: `Run one etcd member in this process, for a Concord server's --etcd-servers.

The flags are etcd's own. Without flags the member is a single-member cluster named
"default", serving clients on http://localhost:2379 with its data in default.etcd.
For a cluster, start every member with the same --initial-cluster.`,
		Example: `  concord etcd --name a --data-dir /var/lib/concord/etcd \
    --listen-client-urls http://10.0.0.1:2379 --listen-peer-urls http://10.0.0.1:2380 \
    --initial-cluster a=http://10.0.0.1:2380,b=http://10.0.0.2:2380,c=http://10.0.0.3:2380`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMember(cmd.Context(), *cfg)
		},
	}
	cfg.AddFlags(cmd.Flags())
	return cmd
}

// runMember runs one member until ctx ends or a termination signal arrives.
func runMember(ctx context.Context, cfg EmbeddedConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := klog.FromContext(ctx)

	member, err := StartEmbedded(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			logger.Info("Stopped before the etcd member was ready", "name", cfg.name(), "reason", context.Cause(ctx))
			return nil
		}
		return err
	}
	defer member.Close()
	logger.Info("etcd member is serving", "name", cfg.name(), "dataDir", cfg.dataDir(),
		"clientURLs", member.Endpoints(), "peerURLs", member.PeerURLs())

	select {
	case <-ctx.Done():
		logger.Info("Stopping the etcd member", "name", cfg.name())
		member.Close()
		return nil
	case err := <-member.Err():
		return err
	}
}
