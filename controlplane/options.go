package controlplane

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/concordproject/concord/audit"
	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/encryption"
	"github.com/concordproject/concord/etcd"
	"github.com/concordproject/concord/flowcontrol"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/kubesemantics"
	"github.com/concordproject/concord/memory"
	"github.com/concordproject/concord/quota"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/service"
	"github.com/concordproject/concord/serviceaccount"
	"github.com/spf13/pflag"
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
	// Services are the flags of Services' cluster IPs and node ports.
	Services service.Options
	// Etcd holds the etcd flags: the cluster (none: an embedded one in DataDir/etcd),
	// the key prefix, compaction.
	Etcd etcd.Options
	// CertDir holds ca.crt and the generated serving certificate (default DataDir/pki).
	CertDir string
	// TLSCertFile and TLSKeyFile bring your own serving certificate.
	TLSCertFile, TLSKeyFile string
	// Auth holds the authentication and authorization flags (static tokens, the
	// --requestheader-* flags of an aggregated server, --authorization-mode).
	Auth auth.Options
	// AggregatorKubeconfig, if set, is the kubeconfig of the aggregator this server is
	// registered behind: the server publishes there, under its own identity lease, its
	// StorageVersion entries of the resources of AggregatedGroups (package
	// storageversion/publisher), before it encodes in a new version.
	AggregatorKubeconfig string
	AggregatedGroups     []string
	// ServiceAccounts are the service account token flags.
	ServiceAccounts serviceaccount.Options
	// KubeconfigOut is where the admin kubeconfig is written (default
	// DataDir/admin.kubeconfig).
	KubeconfigOut string
	// ServerID identifies this server among those sharing the etcd (default derived
	// from the hostname and port, stable across restarts).
	ServerID string
	// IdentityLease holds the identity lease's duration and renewal interval.
	IdentityLease identity.Options
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
	// Store holds the object store's flags: its watch caches and the watches'
	// bookmarks.
	Store store.Options
	// Profiling serves Go's profiles at /debug/pprof/ (default true, as
	// kube-apiserver's --profiling).
	Profiling bool
	// FlowControl holds API priority and fairness's flags.
	FlowControl flowcontrol.Options
	// RequestTimeout bounds every request but watches, the reading of its body
	// included: past it the request is answered 504 (kube-apiserver's
	// --request-timeout; default 1m).
	RequestTimeout time.Duration
	// Memory holds --memory-limit, the soft limit of the process's memory.
	Memory memory.Options
	// LogFormat is "text" or "json".
	LogFormat string
	// Encryption holds --encryption-provider-config: encryption at rest.
	Encryption encryption.Options
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
		DataDir:                 "concord-data",
		BindAddress:             "127.0.0.1",
		SecurePort:              6443,
		LogFormat:               "text",
		EventTTL:                time.Hour,
		ResourceQuotaSyncPeriod: quota.DefaultResyncPeriod,
		Profiling:               true,
		RequestTimeout:          time.Minute,
		Compatibility:           compatibility.Options{KubeGates: kubesemantics.FeatureGates()},
		Audit:                   audit.NewOptions(),
		Services:                service.NewOptions(),
		Etcd:                    etcd.NewOptions(),
		Store:                   store.NewOptions(),
		Auth:                    auth.NewOptions(),
		ServiceAccounts:         serviceaccount.NewOptions(),
		IdentityLease:           identity.NewOptions(),
		FlowControl:             flowcontrol.NewOptions(),
	}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for the embedded etcd, certificates and admin.kubeconfig.")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "IP address to serve on.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "Port to serve HTTPS on (0 picks a free port).")
	fs.StringVar(&o.AdvertiseAddress, "advertise-address", o.AdvertiseAddress,
		"IP address the server advertises to the cluster (the endpoints of the kubernetes Service); default --bind-address, or the host's default interface address when that is 0.0.0.0 or ::.")
	o.Services.AddFlags(fs)
	o.Etcd.AddFlags(fs)
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "Directory of the CA and serving certificates (default <data-dir>/pki).")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "Serving certificate (PEM); generated when empty.")
	fs.StringVar(&o.TLSKeyFile, "tls-private-key-file", o.TLSKeyFile, "Private key of --tls-cert-file (PEM).")
	o.Auth.AddFlags(fs)
	fs.StringVar(&o.AggregatorKubeconfig, "aggregator-kubeconfig", o.AggregatorKubeconfig,
		"Kubeconfig of the aggregator this server is registered behind (an APIService there): the server publishes its StorageVersion entries of --aggregated-groups' resources there too.")
	fs.StringSliceVar(&o.AggregatedGroups, "aggregated-groups", o.AggregatedGroups,
		"API groups the aggregator's APIServices route to this server, with --aggregator-kubeconfig.")
	o.ServiceAccounts.AddFlags(fs)
	fs.StringVar(&o.KubeconfigOut, "kubeconfig-out", o.KubeconfigOut, "Where to write the admin kubeconfig (default <data-dir>/admin.kubeconfig).")
	fs.StringVar(&o.ServerID, "server-id", o.ServerID, "Identity of this server among those sharing etcd (default derived from hostname and port).")
	o.IdentityLease.AddFlags(fs)
	fs.BoolVar(&o.DisableStorageMigration, "disable-storage-migration", o.DisableStorageMigration, "Do not run the storage-migration controllers in this server.")
	fs.DurationVar(&o.EventTTL, "event-ttl", o.EventTTL, "How long Events are kept after their last write; etcd then deletes them.")
	fs.DurationVar(&o.ResourceQuotaSyncPeriod, "resource-quota-sync-period", o.ResourceQuotaSyncPeriod,
		"How often every ResourceQuota's usage is recounted in full (which also takes back the charge of a creation that then failed).")
	o.Store.AddFlags(fs)
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Serve Go's CPU, heap, goroutine and execution-trace profiles at /debug/pprof/ to authorized clients.")
	o.FlowControl.AddFlags(fs)
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout,
		"How long a request but a watch may take, the reading of its body included, before it is answered 504 Timeout.")
	o.Memory.AddFlags(fs)
	o.Encryption.AddFlags(fs)
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
	errs = append(errs, o.Services.Validate()...)
	if o.SecurePort < 0 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d is not between 0 and 65535", o.SecurePort))
	}
	errs = append(errs, o.Etcd.Validate()...)
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-private-key-file must be given together"))
	}
	for _, f := range []struct{ flag, path string }{{"--tls-cert-file", o.TLSCertFile}, {"--tls-private-key-file", o.TLSKeyFile}, {"--aggregator-kubeconfig", o.AggregatorKubeconfig}} {
		if f.path != "" {
			if _, err := os.Stat(f.path); err != nil {
				errs = append(errs, fmt.Errorf("%s %q cannot be read: %w", f.flag, f.path, err))
			}
		}
	}
	if (o.AggregatorKubeconfig == "") != (len(o.AggregatedGroups) == 0) {
		errs = append(errs, errors.New("--aggregator-kubeconfig and --aggregated-groups must be given together"))
	}
	errs = append(errs, o.Auth.Validate()...)
	errs = append(errs, o.ServiceAccounts.Validate()...)
	if o.EventTTL < time.Second {
		errs = append(errs, fmt.Errorf("--event-ttl %s must be at least 1s", o.EventTTL))
	}
	if o.ResourceQuotaSyncPeriod < time.Second {
		errs = append(errs, fmt.Errorf("--resource-quota-sync-period %s must be at least 1s", o.ResourceQuotaSyncPeriod))
	}
	errs = append(errs, o.Store.Validate()...)
	errs = append(errs, o.IdentityLease.Validate()...)
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
	errs = append(errs, o.FlowControl.Validate()...)
	if o.RequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--request-timeout %s must be positive", o.RequestTimeout))
	}
	errs = append(errs, o.Memory.Validate()...)
	return errs
}

// maxBodyReadsPerUser is how many of one user's requests may be sending their bodies
// at once: a quarter of the in-flight limit, so that a user's stalled uploads count
// against it without taking what the others need (at least 1).
func (o *Options) maxBodyReadsPerUser() int {
	return max(1, o.FlowControl.ConcurrencyLimit()/4)
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
