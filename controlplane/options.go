package controlplane

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/concordproject/concord/audit"
	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/compaction"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/etcd"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/kubesemantics"
	"github.com/concordproject/concord/memory"
	"github.com/concordproject/concord/quota"
	"github.com/concordproject/concord/service"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Options are the settings of one server, bound to the `concord server` flags.
type Options struct {
	// DataDir holds the embedded etcd, the certificates and admin.kubeconfig.
	DataDir string
	// BindAddress and SecurePort are where the server listens (port 0: any free port).
	BindAddress string
	SecurePort  int
	// AdvertiseAddress is the address the server tells the cluster it serves on (the
	// kubernetes Service's endpoints); empty: BindAddress, or, when that is
	// unspecified (0.0.0.0, ::), the host's default interface address.
	AdvertiseAddress string
	// ServiceClusterIPRange is where Services' cluster IPs come from: one CIDR, or two
	// of different IP families (kube-apiserver's --service-cluster-ip-range; default
	// 10.0.0.0/24). ServiceNodePortRange is where their node ports come from
	// (--service-node-port-range; default 30000-32767).
	ServiceClusterIPRange string
	ServiceNodePortRange  string
	// ServiceRepairGrace is how long the repair controller keeps an IPAddress or node
	// port record no Service holds (default 1m; shorter in tests).
	ServiceRepairGrace time.Duration
	// Etcd is the external etcd; no endpoints means an embedded one in DataDir/etcd.
	Etcd etcd.ClientConfig
	// EtcdPrefix is the key prefix of all data.
	EtcdPrefix string
	// EtcdCompactionInterval is how often the servers sharing the etcd compact its
	// history older than that (--etcd-compaction-interval, default 5m as kube's); 0
	// leaves compaction to etcd or its operator.
	EtcdCompactionInterval time.Duration
	// EtcdUnsafeNoFsync makes an embedded etcd skip fsync (tests only).
	EtcdUnsafeNoFsync bool
	// CertDir holds ca.crt and the generated serving certificate (default DataDir/pki).
	CertDir string
	// TLSCertFile and TLSKeyFile bring your own serving certificate.
	TLSCertFile, TLSKeyFile string
	// TokenAuthFile is a static token CSV (token,user,uid,"group1,group2").
	TokenAuthFile string
	// RequestHeader authenticates the requests an aggregator forwards, when this
	// server runs as an aggregated API server behind it (kube-apiserver's
	// --requestheader-* flags); off while RequestHeaderClientCAFile is empty.
	RequestHeaderClientCAFile string
	RequestHeader             auth.RequestHeaderConfig
	// AggregatorKubeconfig, if set, is the kubeconfig of the aggregator this server is
	// registered behind: the server publishes there, under its own identity lease, its
	// StorageVersion entries of the resources of AggregatedGroups (package
	// storageversion/publisher), before it encodes in a new version.
	AggregatorKubeconfig string
	AggregatedGroups     []string
	// ServiceAccountIssuer is the "iss" of the service account tokens the servers
	// issue, and the issuer of their OpenID discovery document (kube-apiserver's
	// --service-account-issuer). APIAudiences are the audiences the API accepts in
	// tokens (default: the issuer). ServiceAccountMaxTokenExpiration caps the lifetime
	// of requested tokens (0: no cap).
	ServiceAccountIssuer             string
	APIAudiences                     []string
	ServiceAccountMaxTokenExpiration time.Duration
	// AuthorizationModes decide requests, in order (auth.Modes; default RBAC, as
	// kube-apiserver's --authorization-mode=RBAC). Members of system:masters may do
	// anything whatever the modes.
	AuthorizationModes []string
	// KubeconfigOut is where the admin kubeconfig is written (default
	// DataDir/admin.kubeconfig).
	KubeconfigOut string
	// ServerID identifies this server among those sharing the etcd (default derived
	// from the hostname and port, stable across restarts).
	ServerID string
	// WatchBookmarkInterval is how often idle watches that asked for bookmarks get one
	// (default 30s).
	WatchBookmarkInterval time.Duration
	// IdentityLeaseDuration is how long the server's identity lease lasts after each
	// renewal (whole seconds): once it expires, peers collect the server's storage
	// version entries. IdentityLeaseRenewInterval is how often it is renewed.
	IdentityLeaseDuration      time.Duration
	IdentityLeaseRenewInterval time.Duration
	// DisableStorageMigration keeps the storage-migration controllers (trigger and
	// migrator) from running in this server; run `concord controller-manager` instead,
	// or nothing.
	DisableStorageMigration bool
	// EventTTL is how long Events (core and events.k8s.io) live after their last
	// write (default 1h, as kube-apiserver's --event-ttl).
	EventTTL time.Duration
	// ResourceQuotaSyncPeriod is how often the usage controller recounts every quota
	// (default 5m, as kube-controller-manager's --resource-quota-sync-period).
	ResourceQuotaSyncPeriod time.Duration
	// WatchCache answers lists and watches from per-resource caches in memory (default
	// true, as kube-apiserver's --watch-cache); WatchCacheMemoryLimit bounds their
	// estimated memory, a quantity of bytes ("4Gi"; "0": no bound).
	WatchCache            bool
	WatchCacheMemoryLimit string
	// Profiling serves Go's profiles at /debug/pprof/ (default true, as
	// kube-apiserver's --profiling).
	Profiling bool
	// EnablePriorityAndFairness classifies, queues and limits requests by the
	// FlowSchemas and PriorityLevelConfigurations (default true, as kube-apiserver).
	EnablePriorityAndFairness bool
	// MaxRequestsInflight and MaxMutatingRequestsInflight add up to the seats API
	// priority and fairness shares among priority levels (kube-apiserver's flags of
	// the same names; defaults 400 and 200).
	MaxRequestsInflight, MaxMutatingRequestsInflight int
	// RequestTimeout bounds every request but watches, the reading of its body
	// included: past it the request is answered 504 (kube-apiserver's
	// --request-timeout; default 1m).
	RequestTimeout time.Duration
	// MemoryLimit is the most memory the process may use, a quantity of bytes ("12Gi");
	// empty derives it from the machine (package memory).
	MemoryLimit string
	// LogFormat is "text" or "json".
	LogFormat string
	// EncryptionProviderConfig is the EncryptionConfiguration
	// (apiserver.config.k8s.io/v1) that seals stored values (--encryption-provider-config).
	EncryptionProviderConfig string
	// Audit holds the audit flags (--audit-policy-file, --audit-log-*,
	// --audit-webhook-*), kube-apiserver's.
	Audit audit.Options
	// Compatibility holds the KEP-4330 flags: the API catalog, binary, emulation and
	// minimum compatibility versions, feature gates and runtime config.
	Compatibility compatibility.Options
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		DataDir:                     "concord-data",
		BindAddress:                 "127.0.0.1",
		ServiceClusterIPRange:       service.DefaultClusterIPRange,
		ServiceNodePortRange:        service.DefaultNodePortRange,
		ServiceRepairGrace:          service.DefaultRepairGrace,
		SecurePort:                  6443,
		EtcdPrefix:                  "/registry",
		EtcdCompactionInterval:      compaction.DefaultInterval,
		LogFormat:                   "text",
		AuthorizationModes:          []string{auth.ModeRBAC},
		ServiceAccountIssuer:        "https://kubernetes.default.svc.cluster.local",
		WatchBookmarkInterval:       30 * time.Second,
		EventTTL:                    time.Hour,
		ResourceQuotaSyncPeriod:     quota.DefaultResyncPeriod,
		WatchCache:                  true,
		WatchCacheMemoryLimit:       "4Gi",
		Profiling:                   true,
		EnablePriorityAndFairness:   true,
		MaxRequestsInflight:         400,
		MaxMutatingRequestsInflight: 200,
		RequestTimeout:              time.Minute,
		IdentityLeaseDuration:       identity.DefaultLeaseDuration,
		IdentityLeaseRenewInterval:  identity.DefaultRenewInterval,
		Compatibility:               compatibility.Options{KubeGates: kubesemantics.FeatureGates()},
		Audit:                       audit.NewOptions(),
		RequestHeader: auth.RequestHeaderConfig{
			UsernameHeaders: []string{"X-Remote-User"}, UIDHeaders: []string{"X-Remote-Uid"},
			GroupHeaders: []string{"X-Remote-Group"}, ExtraHeaderPrefixes: []string{"X-Remote-Extra-"},
		},
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for the embedded etcd, certificates and admin.kubeconfig.")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "IP address to serve on.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "Port to serve HTTPS on (0 picks a free port).")
	fs.StringVar(&o.AdvertiseAddress, "advertise-address", o.AdvertiseAddress,
		"IP address the server advertises to the cluster (the endpoints of the kubernetes Service); default --bind-address, or the host's default interface address when that is 0.0.0.0 or ::.")
	fs.StringVar(&o.ServiceClusterIPRange, "service-cluster-ip-range", o.ServiceClusterIPRange,
		"CIDR from which Services' cluster IPs are allocated (the default ServiceCIDR \"kubernetes\"); two CIDRs of different IP families, comma-separated, for dual-stack.")
	fs.StringVar(&o.ServiceNodePortRange, "service-node-port-range", o.ServiceNodePortRange,
		"Port range from which NodePort and LoadBalancer Services' node ports are allocated, inclusive at both ends (e.g. 30000-32767).")
	fs.DurationVar(&o.ServiceRepairGrace, "service-repair-grace", o.ServiceRepairGrace,
		"How long the repair controller keeps an IPAddress or node port record no Service holds before it removes it.")
	_ = fs.MarkHidden("service-repair-grace")
	o.Etcd.AddFlags(fs)
	fs.StringVar(&o.EtcdPrefix, "etcd-prefix", o.EtcdPrefix, "Prefix of every etcd key Concord writes.")
	fs.DurationVar(&o.EtcdCompactionInterval, "etcd-compaction-interval", o.EtcdCompactionInterval,
		"How often the servers sharing the etcd compact its history older than that, taking turns; 0 leaves compaction to etcd or its operator.")
	fs.BoolVar(&o.EtcdUnsafeNoFsync, "etcd-unsafe-no-fsync", o.EtcdUnsafeNoFsync, "Embedded etcd skips fsync: faster, loses data on a crash (tests only).")
	_ = fs.MarkHidden("etcd-unsafe-no-fsync")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "Directory of the CA and serving certificates (default <data-dir>/pki).")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "Serving certificate (PEM); generated when empty.")
	fs.StringVar(&o.TLSKeyFile, "tls-private-key-file", o.TLSKeyFile, "Private key of --tls-cert-file (PEM).")
	fs.StringVar(&o.TokenAuthFile, "token-auth-file", o.TokenAuthFile, `Static bearer tokens, CSV: token,user,uid,"group1,group2".`)
	o.addRequestHeaderFlags(fs)
	fs.StringVar(&o.AggregatorKubeconfig, "aggregator-kubeconfig", o.AggregatorKubeconfig,
		"Kubeconfig of the aggregator this server is registered behind (an APIService there): the server publishes its StorageVersion entries of --aggregated-groups' resources there too.")
	fs.StringSliceVar(&o.AggregatedGroups, "aggregated-groups", o.AggregatedGroups,
		"API groups the aggregator's APIServices route to this server, with --aggregator-kubeconfig.")
	fs.StringVar(&o.ServiceAccountIssuer, "service-account-issuer", o.ServiceAccountIssuer,
		"Issuer (iss) of the service account tokens every server of the cluster issues and accepts: an https URL, or a name without a colon (as Kubernetes allows).")
	fs.StringSliceVar(&o.APIAudiences, "api-audiences", o.APIAudiences,
		"Audiences a token must be for to authenticate to the API (default: --service-account-issuer).")
	fs.DurationVar(&o.ServiceAccountMaxTokenExpiration, "service-account-max-token-expiration", o.ServiceAccountMaxTokenExpiration,
		"Longest lifetime of a requested service account token; longer requests get this lifetime (0: no cap; else at least 1h).")
	fs.StringSliceVar(&o.AuthorizationModes, "authorization-mode", o.AuthorizationModes,
		"Ordered list of authorization modes, each of "+strings.Join(auth.Modes, ", ")+"; the first to allow or deny decides. Members of system:masters may do anything.")
	fs.StringVar(&o.KubeconfigOut, "kubeconfig-out", o.KubeconfigOut, "Where to write the admin kubeconfig (default <data-dir>/admin.kubeconfig).")
	fs.StringVar(&o.ServerID, "server-id", o.ServerID, "Identity of this server among those sharing etcd (default derived from hostname and port).")
	fs.DurationVar(&o.WatchBookmarkInterval, "watch-bookmark-interval", o.WatchBookmarkInterval, "How often idle watches that asked for bookmarks receive one.")
	_ = fs.MarkHidden("watch-bookmark-interval")
	fs.DurationVar(&o.IdentityLeaseDuration, "identity-lease-duration", o.IdentityLeaseDuration,
		"How long the server's identity lease (kube-system) lasts after each renewal, in whole seconds. Peers collect a server's storage version entries once its lease expired.")
	fs.DurationVar(&o.IdentityLeaseRenewInterval, "identity-lease-renew-interval", o.IdentityLeaseRenewInterval,
		"How often the server renews its identity lease; shorter than --identity-lease-duration.")
	fs.BoolVar(&o.DisableStorageMigration, "disable-storage-migration", o.DisableStorageMigration, "Do not run the storage-migration controllers in this server.")
	fs.DurationVar(&o.EventTTL, "event-ttl", o.EventTTL, "How long Events are kept after their last write; etcd then deletes them.")
	fs.DurationVar(&o.ResourceQuotaSyncPeriod, "resource-quota-sync-period", o.ResourceQuotaSyncPeriod,
		"How often every ResourceQuota's usage is recounted in full (which also takes back the charge of a creation that then failed).")
	fs.BoolVar(&o.WatchCache, "watch-cache", o.WatchCache,
		"Answer lists and watches from a cache in memory per resource (started when the resource is first read, stopped when unused); false reads etcd every time.")
	fs.StringVar(&o.WatchCacheMemoryLimit, "watch-cache-memory-limit", o.WatchCacheMemoryLimit,
		"Bound on the watch caches' estimated memory, in bytes (a quantity: 4Gi, 512Mi; 0 for none). Past it the least recently used caches stop and their resources are read from etcd.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Serve Go's CPU, heap, goroutine and execution-trace profiles at /debug/pprof/ to authorized clients.")
	fs.BoolVar(&o.EnablePriorityAndFairness, "enable-priority-and-fairness", o.EnablePriorityAndFairness,
		"Classify, queue and limit requests by the FlowSchemas and PriorityLevelConfigurations of flowcontrol.apiserver.k8s.io/v1 (API priority and fairness).")
	fs.IntVar(&o.MaxRequestsInflight, "max-requests-inflight", o.MaxRequestsInflight,
		"With --max-mutating-requests-inflight, the number of requests the server executes at once, shared among priority levels.")
	fs.IntVar(&o.MaxMutatingRequestsInflight, "max-mutating-requests-inflight", o.MaxMutatingRequestsInflight,
		"With --max-requests-inflight, the number of requests the server executes at once, shared among priority levels.")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout,
		"How long a request but a watch may take, the reading of its body included, before it is answered 504 Timeout.")
	fs.StringVar(&o.MemoryLimit, "memory-limit", o.MemoryLimit,
		"The most memory the process may use (a quantity: 12Gi), a soft limit its garbage collector keeps to; default 90% of the cgroup's memory limit, else 75% of physical memory. GOMEMLIMIT in the environment wins.")
	fs.StringVar(&o.EncryptionProviderConfig, "encryption-provider-config", o.EncryptionProviderConfig,
		"EncryptionConfiguration (apiserver.config.k8s.io/v1) of the providers that encrypt stored values at rest, per resource (identity, aescbc, aesgcm, secretbox, kms v2). A new write key is migrated to by itself once every server writes with it.")
	fs.StringVar(&o.LogFormat, "logging-format", o.LogFormat, "Log format: text or json.")
	o.Compatibility.AddFlags(fs)
	o.Audit.AddFlags(fs)
}

// Validate reports every invalid option, each as one line saying what is allowed.
func (o *Options) Validate() error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	if net.ParseIP(o.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--bind-address %q is not an IP address", o.BindAddress))
	}
	if o.AdvertiseAddress != "" {
		if ip := net.ParseIP(o.AdvertiseAddress); ip == nil || ip.IsUnspecified() {
			errs = append(errs, fmt.Errorf("--advertise-address %q is not a specific IP address", o.AdvertiseAddress))
		}
	}
	if _, err := service.ParseClusterIPRanges(o.ServiceClusterIPRange); err != nil {
		errs = append(errs, err)
	}
	if _, err := service.ParseNodePortRange(o.ServiceNodePortRange); err != nil {
		errs = append(errs, err)
	}
	if o.ServiceRepairGrace <= 0 {
		errs = append(errs, fmt.Errorf("--service-repair-grace %s must be positive", o.ServiceRepairGrace))
	}
	if o.SecurePort < 0 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d is not between 0 and 65535", o.SecurePort))
	}
	if len(o.Etcd.Endpoints) > 0 {
		if err := o.Etcd.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if o.EtcdPrefix == "" || o.EtcdPrefix[0] != '/' {
		errs = append(errs, fmt.Errorf("--etcd-prefix %q must start with /", o.EtcdPrefix))
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file must be given together"))
	}
	for _, f := range []struct{ flag, path string }{{"--tls-cert-file", o.TLSCertFile}, {"--tls-private-key-file", o.TLSKeyFile}, {"--token-auth-file", o.TokenAuthFile}, {"--requestheader-client-ca-file", o.RequestHeaderClientCAFile}, {"--aggregator-kubeconfig", o.AggregatorKubeconfig}} {
		if f.path != "" {
			if _, err := os.Stat(f.path); err != nil {
				errs = append(errs, fmt.Errorf("%s %q cannot be read: %w", f.flag, f.path, err))
			}
		}
	}
	if (o.AggregatorKubeconfig == "") != (len(o.AggregatedGroups) == 0) {
		errs = append(errs, errors.New("--aggregator-kubeconfig and --aggregated-groups must be given together"))
	}
	if err := auth.ValidateModes(o.AuthorizationModes); err != nil {
		errs = append(errs, fmt.Errorf("--authorization-mode: %w", err))
	}
	errs = append(errs, o.validateServiceAccounts()...)
	if o.EventTTL < time.Second {
		errs = append(errs, fmt.Errorf("--event-ttl %s must be at least 1s", o.EventTTL))
	}
	if o.ResourceQuotaSyncPeriod < time.Second {
		errs = append(errs, fmt.Errorf("--resource-quota-sync-period %s must be at least 1s", o.ResourceQuotaSyncPeriod))
	}
	if _, err := o.watchCacheMemoryLimit(); err != nil {
		errs = append(errs, err)
	}
	if o.IdentityLeaseDuration < time.Second || o.IdentityLeaseDuration%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--identity-lease-duration %s must be a whole number of seconds, at least 1s", o.IdentityLeaseDuration))
	}
	if o.IdentityLeaseRenewInterval <= 0 || o.IdentityLeaseRenewInterval >= o.IdentityLeaseDuration {
		errs = append(errs, fmt.Errorf("--identity-lease-renew-interval %s must be positive and shorter than --identity-lease-duration %s", o.IdentityLeaseRenewInterval, o.IdentityLeaseDuration))
	}
	errs = append(errs, o.validateLoad()...)
	if o.LogFormat != "text" && o.LogFormat != "json" {
		errs = append(errs, fmt.Errorf("--logging-format %q is not allowed: use text or json", o.LogFormat))
	}
	if err := o.Compatibility.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := o.Audit.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validateLoad checks the flags that bound the load the server takes: concurrency,
// request time and memory.
func (o *Options) validateLoad() []error {
	var errs []error
	if o.MaxRequestsInflight < 0 || o.MaxMutatingRequestsInflight < 0 {
		errs = append(errs, fmt.Errorf("--max-requests-inflight %d and --max-mutating-requests-inflight %d must not be negative", o.MaxRequestsInflight, o.MaxMutatingRequestsInflight))
	} else if o.EnablePriorityAndFairness && o.concurrencyLimit() < 1 {
		errs = append(errs, errors.New("--max-requests-inflight plus --max-mutating-requests-inflight must be at least 1 with --enable-priority-and-fairness"))
	}
	if o.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--request-timeout %s must be positive", o.RequestTimeout))
	}
	if o.EtcdCompactionInterval < 0 {
		errs = append(errs, fmt.Errorf("--etcd-compaction-interval %s must not be negative (0 turns compaction off)", o.EtcdCompactionInterval))
	}
	if o.MemoryLimit != "" {
		if _, err := o.memoryCeiling(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// validateServiceAccounts checks the service account token flags as kube-apiserver
// does: an issuer that is an https URL or has no colon, a cap of at least an hour.
func (o *Options) validateServiceAccounts() []error {
	var errs []error
	iss := o.ServiceAccountIssuer
	if u, err := url.Parse(iss); iss == "" || (strings.Contains(iss, ":") && (err != nil || u.Scheme != "https" || u.Host == "")) {
		errs = append(errs, fmt.Errorf("--service-account-issuer %q must be an https URL or a name without a colon", iss))
	}
	if d := o.ServiceAccountMaxTokenExpiration; d != 0 && d < time.Hour {
		errs = append(errs, fmt.Errorf("--service-account-max-token-expiration %s must be 0 (no cap) or at least 1h", d))
	}
	return errs
}

// apiAudiences are the audiences the API accepts: --api-audiences, else the issuer.
func (o *Options) apiAudiences() []string {
	if len(o.APIAudiences) > 0 {
		return o.APIAudiences
	}
	return []string{o.ServiceAccountIssuer}
}

// watchCacheMemoryLimit parses --watch-cache-memory-limit.
func (o *Options) watchCacheMemoryLimit() (int64, error) {
	q, err := resource.ParseQuantity(o.WatchCacheMemoryLimit)
	if err != nil || q.Sign() < 0 {
		return 0, fmt.Errorf("--watch-cache-memory-limit %q must be a non-negative quantity of bytes, such as 4Gi or 512Mi (0: no limit)", o.WatchCacheMemoryLimit)
	}
	return q.Value(), nil
}

// memoryCeiling is --memory-limit in bytes, or the ceiling derived from the machine.
func (o *Options) memoryCeiling() (int64, error) {
	if o.MemoryLimit == "" {
		return memory.DefaultCeiling()
	}
	q, err := resource.ParseQuantity(o.MemoryLimit)
	if err != nil || q.Value() < 64<<20 {
		return 0, fmt.Errorf("--memory-limit %q must be a quantity of bytes of at least 64Mi, such as 12Gi", o.MemoryLimit)
	}
	return q.Value(), nil
}

// concurrencyLimit is how many seats API priority and fairness shares.
func (o *Options) concurrencyLimit() int {
	return o.MaxRequestsInflight + o.MaxMutatingRequestsInflight
}

// maxBodyReadsPerUser is how many of one user's requests may be sending their bodies
// at once: a quarter of the in-flight limit, so that a user's stalled uploads count
// against it without taking what the others need (at least 1).
func (o *Options) maxBodyReadsPerUser() int {
	return max(1, o.concurrencyLimit()/4)
}

func (o *Options) certDir() string {
	if o.CertDir != "" {
		return o.CertDir
	}
	return filepath.Join(o.DataDir, "pki")
}

func (o *Options) kubeconfigPath() string {
	if o.KubeconfigOut != "" {
		return o.KubeconfigOut
	}
	return filepath.Join(o.DataDir, "admin.kubeconfig")
}

// addRequestHeaderFlags binds the --requestheader-* flags: how the requests an
// aggregator forwards are authenticated.
func (o *Options) addRequestHeaderFlags(fs *pflag.FlagSet) {
	rh := &o.RequestHeader
	fs.StringVar(&o.RequestHeaderClientCAFile, "requestheader-client-ca-file", o.RequestHeaderClientCAFile,
		"CA (PEM) of the client certificates an aggregator presents when it forwards requests, the user in the headers below; "+
			"its requestheader-client-ca-file (a Concord aggregator publishes it in kube-system/extension-apiserver-authentication). Empty: no forwarded requests.")
	fs.StringSliceVar(&rh.AllowedNames, "requestheader-allowed-names", rh.AllowedNames,
		"Common names the aggregator's client certificate may have (empty: any the CA signed).")
	fs.StringSliceVar(&rh.UsernameHeaders, "requestheader-username-headers", rh.UsernameHeaders, "Headers that name the forwarded user.")
	fs.StringSliceVar(&rh.UIDHeaders, "requestheader-uid-headers", rh.UIDHeaders, "Headers that give the forwarded user's UID.")
	fs.StringSliceVar(&rh.GroupHeaders, "requestheader-group-headers", rh.GroupHeaders, "Headers that give the forwarded user's groups.")
	fs.StringSliceVar(&rh.ExtraHeaderPrefixes, "requestheader-extra-headers-prefix", rh.ExtraHeaderPrefixes, "Prefixes of the headers of the forwarded user's extra fields.")
}
