package controlplane

import (
	"errors"
	"fmt"
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
	"github.com/concordproject/concord/logs"
	"github.com/concordproject/concord/memory"
	"github.com/concordproject/concord/quota"
	"github.com/concordproject/concord/registry/store"
	"github.com/concordproject/concord/server"
	"github.com/concordproject/concord/service"
	"github.com/concordproject/concord/serviceaccount"
	"github.com/concordproject/concord/storageversion/publisher"
	"github.com/spf13/pflag"
)

// Options are the settings of one server, bound to the `concord server` flags: a few
// of the server's own, and one group per feature, each with its flags and checks (as
// kube-apiserver's option groups).
type Options struct {
	// DataDir holds the embedded etcd, the certificates and admin.kubeconfig.
	DataDir string
	// KubeconfigOut is where the admin kubeconfig is written (default
	// DataDir/admin.kubeconfig).
	KubeconfigOut string
	// ServerID identifies this server among those sharing the etcd (default derived
	// from the hostname and port, stable across restarts).
	ServerID string
	// DisableStorageMigration keeps the storage-migration controllers (trigger and
	// migrator) from running in this server; run `concord controller-manager` instead,
	// or nothing.
	DisableStorageMigration bool
	// EventTTL is how long Events (core and events.k8s.io) live after their last
	// write (default 1h, as kube-apiserver's --event-ttl).
	EventTTL time.Duration

	Serving         server.ServingOptions
	Etcd            etcd.Options
	Store           store.Options
	Encryption      encryption.Options
	Auth            auth.Options
	ServiceAccounts serviceaccount.Options
	IdentityLease   identity.Options
	Services        service.Options
	FlowControl     flowcontrol.Options
	Quota           quota.Options
	Mirror          publisher.MirrorOptions
	Memory          memory.Options
	Logs            logs.Options
	Audit           audit.Options
	Compatibility   compatibility.Options
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{DataDir: "concord-data", EventTTL: time.Hour, Logs: logs.NewOptions(),
		Serving: server.NewServingOptions(), Etcd: etcd.NewOptions(), Store: store.NewOptions(), Auth: auth.NewOptions(),
		ServiceAccounts: serviceaccount.NewOptions(), IdentityLease: identity.NewOptions(), Services: service.NewOptions(),
		FlowControl: flowcontrol.NewOptions(), Quota: quota.NewOptions(), Audit: audit.NewOptions(),
		Compatibility: compatibility.Options{KubeGates: kubesemantics.FeatureGates()},
	}
}

// flagGroup is one feature's group of options.
type flagGroup interface {
	AddFlags(fs *pflag.FlagSet)
	Validate() []error
}

func (o *Options) groups() []flagGroup {
	return []flagGroup{&o.Logs, &o.Serving, &o.Etcd, &o.Store, &o.Encryption, &o.Auth, &o.ServiceAccounts, &o.IdentityLease,
		&o.Services, &o.FlowControl, &o.Quota, &o.Mirror, &o.Memory}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir, "Directory for the embedded etcd, certificates and admin.kubeconfig.")
	fs.StringVar(&o.KubeconfigOut, "kubeconfig-out", o.KubeconfigOut, "Where to write the admin kubeconfig (default <data-dir>/admin.kubeconfig).")
	fs.StringVar(&o.ServerID, "server-id", o.ServerID, "Identity of this server among those sharing etcd (default derived from hostname and port).")
	fs.BoolVar(&o.DisableStorageMigration, "disable-storage-migration", o.DisableStorageMigration, "Do not run the storage-migration controllers in this server.")
	fs.DurationVar(&o.EventTTL, "event-ttl", o.EventTTL, "How long Events are kept after their last write; etcd then deletes them.")
	for _, g := range o.groups() {
		g.AddFlags(fs)
	}
	o.Compatibility.AddFlags(fs)
	o.Audit.AddFlags(fs)
}

// Validate reports every invalid option, each as one line saying what is allowed.
func (o *Options) Validate() error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, errors.New("--data-dir must not be empty"))
	}
	if o.EventTTL < time.Second {
		errs = append(errs, fmt.Errorf("--event-ttl %s must be at least 1s", o.EventTTL))
	}
	for _, g := range o.groups() {
		errs = append(errs, g.Validate()...)
	}
	return errors.Join(append(errs, o.Compatibility.Validate(), o.Audit.Validate())...)
}

func (o *Options) certDir() string {
	if o.Serving.CertDir != "" {
		return o.Serving.CertDir
	}
	return filepath.Join(o.DataDir, "pki")
}

func (o *Options) kubeconfigPath() string {
	if o.KubeconfigOut != "" {
		return o.KubeconfigOut
	}
	return filepath.Join(o.DataDir, "admin.kubeconfig")
}
