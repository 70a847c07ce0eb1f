package etcd

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/types"
	"go.etcd.io/etcd/server/v3/embed"
)

// Defaults applied to the zero fields of an [EmbeddedConfig].
const (
	// DefaultLogLevel keeps a healthy etcd member silent.
	DefaultLogLevel = "error"
	// DefaultReadyTimeout bounds how long StartEmbedded waits for a member to join its
	// cluster and serve.
	DefaultReadyTimeout = time.Minute
	// DefaultInitialClusterToken is etcd's own default cluster token.
	DefaultInitialClusterToken = "etcd-cluster"
)

// Values accepted by EmbeddedConfig.InitialClusterState.
const (
	ClusterStateNew      = embed.ClusterStateFlagNew
	ClusterStateExisting = embed.ClusterStateFlagExisting
)

var (
	logLevels       = []string{"debug", "info", "warn", "error", "panic", "fatal"}
	compactionModes = []string{embed.CompactorModePeriodic, embed.CompactorModeRevision}
)

// EmbeddedConfig describes one etcd member run inside the Concord process. Field names
// follow etcd's flags; each zero field takes etcd's default unless documented
// otherwise, so the zero value is a single member named "default" serving
// http://localhost:2379 with its data in "default.etcd".
type EmbeddedConfig struct {
	// Name is the member's name, unique within its cluster (--name). Empty means
	// "default".
	Name string
	// DataDir holds the member's write-ahead log, snapshots and database (--data-dir).
	// Empty means "<Name>.etcd" in the working directory. A member restarted on the
	// same DataDir keeps its identity and data; the initial-cluster settings are then
	// ignored.
	DataDir string

	// ListenClientURLs are the addresses to serve clients on (--listen-client-urls).
	// Hosts must be IP addresses or "localhost"; port 0 picks a free port at start.
	// Empty means http://localhost:2379.
	ListenClientURLs []string
	// AdvertiseClientURLs are the client URLs published to the cluster
	// (--advertise-client-urls). Empty means the listen URLs, which then must not bind
	// a wildcard address. A port 0 here must repeat a listen URL exactly, and gets
	// the same port.
	AdvertiseClientURLs []string
	// ListenPeerURLs are the addresses to serve other members on (--listen-peer-urls),
	// with the same rules as ListenClientURLs. Empty means http://localhost:2380.
	ListenPeerURLs []string
	// InitialAdvertisePeerURLs are the peer URLs published to the cluster
	// (--initial-advertise-peer-urls), with the same rules as AdvertiseClientURLs.
	InitialAdvertisePeerURLs []string
	// InitialCluster lists every member of a new cluster as comma-separated
	// name=peerURL pairs (--initial-cluster). It must name this member. Empty means
	// this member alone, at its advertised peer URLs. A URL with port 0 that repeats
	// one of this member's listen peer URLs gets that URL's picked port.
	InitialCluster string
	// InitialClusterState is ClusterStateNew to bootstrap a cluster or
	// ClusterStateExisting to join one (--initial-cluster-state). Empty means new.
	InitialClusterState string
	// InitialClusterToken tells clusters bootstrapped from the same URLs apart
	// (--initial-cluster-token). Empty means DefaultInitialClusterToken.
	InitialClusterToken string

	// ClientTLS secures the client listeners; required for https client URLs.
	ClientTLS TLSFiles
	// PeerTLS secures the peer listeners; required for https peer URLs.
	PeerTLS TLSFiles

	// QuotaBackendBytes raises an alarm and refuses writes once the database reaches
	// this size (--quota-backend-bytes). Zero means etcd's default (2 GiB).
	QuotaBackendBytes int64
	// AutoCompactionMode is "periodic" or "revision" (--auto-compaction-mode). Empty
	// means periodic.
	AutoCompactionMode string
	// AutoCompactionRetention is how much history auto-compaction keeps
	// (--auto-compaction-retention): a duration such as "1h" or a number of hours in
	// periodic mode, a number of revisions in revision mode. Empty or "0" disables
	// auto-compaction, which is right when the API server compacts, as Kubernetes does.
	AutoCompactionRetention string

	// TickMs and ElectionMs are the raft heartbeat interval and election timeout;
	// zero keeps etcd's defaults (100 ms and 1 s). A member that runs alone on one
	// machine can use much shorter ones: its restart waits out one election timeout.
	TickMs, ElectionMs uint
	// UnsafeNoFsync skips every fsync (--unsafe-no-fsync). A crash can then lose or
	// corrupt data: for tests only.
	UnsafeNoFsync bool
	// LogLevel is etcd's own log level: debug, info, warn, error, panic or fatal
	// (--log-level). Empty means DefaultLogLevel.
	LogLevel string

	// ReadyTimeout bounds how long StartEmbedded waits for the member to become ready.
	// Zero means DefaultReadyTimeout; a negative value waits as long as the context
	// allows, as a member of a cluster started by hand must.
	ReadyTimeout time.Duration
}

// TLSFiles names the PEM files that secure one side (client or peer) of a member.
type TLSFiles struct {
	// CertFile and KeyFile are the member's certificate and private key
	// (--cert-file/--key-file, --peer-cert-file/--peer-key-file). Both or neither.
	CertFile, KeyFile string
	// TrustedCAFile verifies the certificates presented by connecting clients or peers
	// (--trusted-ca-file, --peer-trusted-ca-file).
	TrustedCAFile string
	// ClientCertAuth requires connecting clients or peers to present a certificate
	// signed by TrustedCAFile (--client-cert-auth, --peer-client-cert-auth).
	ClientCertAuth bool
}

// Validate reports the first invalid field as an error wrapping ErrInvalidConfig. Its
// message names the etcd flag and says what is allowed. Validate does not touch the
// network or the file system.
func (c *EmbeddedConfig) Validate() error {
	lc, err := parseURLs("--listen-client-urls", c.listenClientURLs(), urlRules{bind: true, unix: true})
	if err != nil {
		return err
	}
	ac, err := parseURLs("--advertise-client-urls", c.AdvertiseClientURLs, urlRules{unix: true})
	if err != nil {
		return err
	}
	lp, err := parseURLs("--listen-peer-urls", c.listenPeerURLs(), urlRules{bind: true})
	if err != nil {
		return err
	}
	ap, err := parseURLs("--initial-advertise-peer-urls", c.InitialAdvertisePeerURLs, urlRules{})
	if err != nil {
		return err
	}
	if err := zeroPortsRepeat("--advertise-client-urls", "--listen-client-urls", c.AdvertiseClientURLs, lc); err != nil {
		return err
	}
	if err := zeroPortsRepeat("--initial-advertise-peer-urls", "--listen-peer-urls", c.InitialAdvertisePeerURLs, lp); err != nil {
		return err
	}
	if len(ac) == 0 {
		if err := notWildcard("--advertise-client-urls", "--listen-client-urls", lc); err != nil {
			return err
		}
	}
	if len(ap) == 0 {
		if err := notWildcard("--initial-advertise-peer-urls", "--listen-peer-urls", lp); err != nil {
			return err
		}
	}
	if err := checkTLS("", c.ClientTLS, slices.Concat(lc, ac)); err != nil {
		return err
	}
	if err := checkTLS("peer-", c.PeerTLS, slices.Concat(lp, ap)); err != nil {
		return err
	}
	if c.InitialCluster != "" {
		members, err := types.NewURLsMap(c.InitialCluster)
		if err != nil {
			return fmt.Errorf("%w: --initial-cluster %q: want comma-separated name=scheme://host:port pairs: %w", ErrInvalidConfig, c.InitialCluster, err)
		}
		if _, ok := members[c.name()]; !ok {
			return fmt.Errorf("%w: --initial-cluster %q does not list this member's --name %q", ErrInvalidConfig, c.InitialCluster, c.name())
		}
		if err := zeroPortsRepeat("--initial-cluster", "--listen-peer-urls", members.URLs(), lp); err != nil {
			return err
		}
	}
	if s := c.InitialClusterState; s != "" && s != ClusterStateNew && s != ClusterStateExisting {
		return fmt.Errorf("%w: --initial-cluster-state %q: want %q or %q", ErrInvalidConfig, s, ClusterStateNew, ClusterStateExisting)
	}
	if c.QuotaBackendBytes < 0 {
		return fmt.Errorf("%w: --quota-backend-bytes %d: want 0 (etcd's default) or a positive size", ErrInvalidConfig, c.QuotaBackendBytes)
	}
	if m := c.AutoCompactionMode; m != "" && !slices.Contains(compactionModes, m) {
		return fmt.Errorf("%w: --auto-compaction-mode %q: want one of %s", ErrInvalidConfig, m, strings.Join(compactionModes, ", "))
	}
	if err := checkRetention(c.compactionMode(), c.AutoCompactionRetention); err != nil {
		return err
	}
	if l := c.LogLevel; l != "" && !slices.Contains(logLevels, l) {
		return fmt.Errorf("%w: --log-level %q: want one of %s", ErrInvalidConfig, l, strings.Join(logLevels, ", "))
	}
	return nil
}

func (c *EmbeddedConfig) name() string {
	if c.Name == "" {
		return embed.DefaultName
	}
	return c.Name
}

func (c *EmbeddedConfig) dataDir() string {
	if c.DataDir == "" {
		return c.name() + ".etcd"
	}
	return c.DataDir
}

func (c *EmbeddedConfig) listenClientURLs() []string {
	if len(c.ListenClientURLs) == 0 {
		return []string{embed.DefaultListenClientURLs}
	}
	return c.ListenClientURLs
}

func (c *EmbeddedConfig) listenPeerURLs() []string {
	if len(c.ListenPeerURLs) == 0 {
		return []string{embed.DefaultListenPeerURLs}
	}
	return c.ListenPeerURLs
}

func (c *EmbeddedConfig) compactionMode() string {
	if c.AutoCompactionMode == "" {
		return embed.DefaultAutoCompactionMode
	}
	return c.AutoCompactionMode
}

func (c *EmbeddedConfig) readyTimeout() time.Duration {
	if c.ReadyTimeout == 0 {
		return DefaultReadyTimeout
	}
	return c.ReadyTimeout
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// urlRules says which URLs a flag accepts.
type urlRules struct {
	bind bool // an address to listen on: the host must be an IP or localhost
	unix bool // unix and unixs sockets allowed
}

func (r urlRules) want() string {
	host := "host"
	if r.bind {
		host = "ip"
	}
	schemes := "http or https"
	if r.unix {
		schemes = "http, https, unix or unixs"
	}
	return fmt.Sprintf("want scheme://%s:port with scheme %s", host, schemes)
}

// parseURLs parses the values of one URL-list flag.
func parseURLs(flag string, values []string, rules urlRules) ([]url.URL, error) {
	urls := make([]url.URL, 0, len(values))
	for _, v := range values {
		u, err := parseURL(v, rules)
		if err != nil {
			return nil, fmt.Errorf("%w: %s %q: %s", ErrInvalidConfig, flag, v, rules.want())
		}
		urls = append(urls, *u)
	}
	return urls, nil
}

func parseURL(s string, rules urlRules) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	switch u.Scheme {
	case "http", "https":
	case "unix", "unixs":
		if rules.unix && (u.Host != "" || u.Path != "") {
			return u, nil
		}
		return nil, fmt.Errorf("unix socket not allowed here")
	default:
		return nil, fmt.Errorf("unsupported scheme %q", u.Scheme)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("URL must be scheme://host:port only")
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return nil, err
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, fmt.Errorf("bad port %q", port)
	}
	if host == "" {
		return nil, fmt.Errorf("empty host")
	}
	if rules.bind && host != "localhost" && net.ParseIP(host) == nil {
		return nil, fmt.Errorf("bind host %q is not an IP address", host)
	}
	u.Path = ""
	return u, nil
}

// zeroPortsRepeat checks that every URL with port 0 in urls repeats one of the listen
// URLs, whose picked port it will share.
func zeroPortsRepeat(flag, listenFlag string, urls []string, listen []url.URL) error {
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil || u.Port() != "0" {
			continue
		}
		if !slices.ContainsFunc(listen, func(l url.URL) bool { return sameAddress(l, *u) }) {
			return fmt.Errorf("%w: %s %q has port 0 but repeats none of %s, whose picked port it would share", ErrInvalidConfig, flag, s, listenFlag)
		}
	}
	return nil
}

// sameAddress reports whether two URLs have the same scheme and host:port.
func sameAddress(a, b url.URL) bool { return a.Scheme == b.Scheme && a.Host == b.Host }

// notWildcard rejects defaulting advertised URLs to listen URLs that bind every
// interface: no client or peer can dial 0.0.0.0.
func notWildcard(advertiseFlag, listenFlag string, listen []url.URL) error {
	for _, u := range listen {
		if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
			return fmt.Errorf("%w: %s is required when %s binds a wildcard address (%s)", ErrInvalidConfig, advertiseFlag, listenFlag, u.String())
		}
	}
	return nil
}

// checkTLS checks one side's TLS files against its URLs. prefix is "" or "peer-".
func checkTLS(prefix string, files TLSFiles, urls []url.URL) error {
	if (files.CertFile == "") != (files.KeyFile == "") {
		return fmt.Errorf("%w: --%scert-file and --%skey-file must be given together", ErrInvalidConfig, prefix, prefix)
	}
	if files.ClientCertAuth && files.TrustedCAFile == "" {
		return fmt.Errorf("%w: --%sclient-cert-auth needs --%strusted-ca-file", ErrInvalidConfig, prefix, prefix)
	}
	for _, u := range urls {
		if (u.Scheme == "https" || u.Scheme == "unixs") && files.CertFile == "" {
			return fmt.Errorf("%w: %s needs --%scert-file and --%skey-file", ErrInvalidConfig, u.String(), prefix, prefix)
		}
	}
	return nil
}

// checkRetention accepts what etcd's compactor accepts: an integer (hours in periodic
// mode, revisions in revision mode) or, in periodic mode, a Go duration.
func checkRetention(mode, retention string) error {
	if retention == "" {
		return nil
	}
	if n, err := strconv.ParseInt(retention, 10, 64); err == nil && n >= 0 {
		return nil
	}
	if mode == embed.CompactorModePeriodic {
		if d, err := time.ParseDuration(retention); err == nil && d >= 0 {
			return nil
		}
		return fmt.Errorf("%w: --auto-compaction-retention %q: want a duration such as 30m or a number of hours", ErrInvalidConfig, retention)
	}
	return fmt.Errorf("%w: --auto-compaction-retention %q: want a number of revisions", ErrInvalidConfig, retention)
}
