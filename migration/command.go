package migration

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/identity/clientlease"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/migration/migrator"
	"github.com/concordproject/concord/wire"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
)

// ControllerManagerKind is the kind `concord controller-manager` announces on its
// identity lease (wire.LabelControllerIdentity).
const ControllerManagerKind = "controller-manager"

// Options are the flags of `concord controller-manager` that shape a Config.
type Options struct {
	// Kubeconfig is the file to connect with ("" means $KUBECONFIG, then
	// ~/.kube/config, then in-cluster).
	Kubeconfig string
	// MetricsBindAddress serves /metrics there over HTTPS, each request authenticated
	// and authorized by the API server ("" disables it).
	MetricsBindAddress string
	// TLSCertFile and TLSPrivateKeyFile are /metrics' serving certificate and key
	// (both "": a self-signed one).
	TLSCertFile, TLSPrivateKeyFile string
	// Config holds every other setting.
	Config Config
	// Compatibility are the component's KEP-4330 versions and the feature gates it
	// honours (StorageVersionAPI: the trigger watches StorageVersion objects where
	// they are served).
	Compatibility compatibility.ComponentOptions
	// ID names the controller manager: its identity lease in kube-system (default
	// controller-manager-<host>-<random>).
	ID string
	// leaderElect mirrors !Config.LeaderElection.Disabled for the flag.
	leaderElect bool
	mode        string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	d := Config{}.withDefaults()
	m := migrator.Options{}
	m.Mode = migrator.ModeAuto
	d.Migrator = m
	d.LeaderElection.Identity = ""
	return &Options{Config: d, leaderElect: true, mode: string(migrator.ModeAuto),
		Compatibility: compatibility.ComponentOptions{Gates: []featuregate.Feature{compatibility.StorageVersionAPI}}}
}

// AddFlags binds the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	c := &o.Config
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig of the API server to migrate (default: $KUBECONFIG, ~/.kube/config, or in-cluster).")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Serve Prometheus /metrics on this host:port over HTTPS to users the API server authenticates (TokenReview) and allows to get the path /metrics (SubjectAccessReview) (empty: off).")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "Serving certificate of /metrics, PEM (default: self-signed).")
	fs.StringVar(&o.TLSPrivateKeyFile, "tls-private-key-file", o.TLSPrivateKeyFile, "Private key of --tls-cert-file, PEM.")
	fs.StringVar(&o.ID, "id", o.ID, "This controller manager's ID: the name of its identity lease in kube-system, which announces its versions (default: controller-manager-<host>-<random>).")
	o.Compatibility.AddFlags(fs)
	fs.StringVar(&o.mode, "rewrite", o.mode, "How objects are rewritten: auto (on the server when it is Concord, else by the client), client, or server.")
	fs.IntVar(&c.Migrator.Concurrency, "concurrency", 8, "Objects written at once by the client-side path.")
	fs.Float32Var(&c.Migrator.QPS, "qps", 0, "Requests per second of the migrator (one per object on the client path, one per page on the server path); 0: no limit.")
	fs.IntVar(&c.Migrator.Burst, "burst", 0, "Requests the migrator may send at once above --qps (default: --qps).")
	fs.Int64Var(&c.Migrator.PageSize, "page-size", 500, "Objects per page (a list, or a server-side rewrite call); each page is a checkpoint.")
	fs.IntVar(&c.Migrator.MaxAttempts, "max-attempts", 5, "Attempts per request that fails transiently (429, 5xx, timeouts) before the object is reported as failed.")
	fs.IntVar(&c.Migrations, "migrations", c.Migrations, "Migrations run at once.")
	fs.DurationVar(&c.PollInterval, "poll-interval", c.PollInterval, "How often discovery is read and storage states looked at (StorageVersion objects are watched); a state's heartbeat is renewed once older than a quarter of --staleness-window, or than this interval if longer.")
	fs.DurationVar(&c.StalenessWindow, "staleness-window", 0, "Heartbeat age after which a storage state is reset to Unknown and its resource migrated again (default: 10m, or twice --poll-interval if longer).")
	fs.DurationVar(&c.RetryFailedAfter, "retry-failed-after", c.RetryFailedAfter, "Wait before a failed migration is started again (doubling per consecutive failure, up to 6h).")
	fs.IntVar(&c.HistoryLimit, "history-limit", c.HistoryLimit, "Ended migrations kept per resource.")
	fs.BoolVar(&c.DisableTrigger, "disable-trigger", c.DisableTrigger, "Only run migrations created by others; start none.")
	fs.BoolVar(&c.SkipCRDs, "skip-crds", c.SkipCRDs, "Do not install the StorageState and StorageVersionMigration definitions.")
	le := &c.LeaderElection
	fs.BoolVar(&o.leaderElect, "leader-elect", o.leaderElect, "Elect one active controller-manager over a Lease.")
	fs.StringVar(&le.Namespace, "leader-elect-resource-namespace", le.Namespace, "Namespace of the leader election Lease.")
	fs.StringVar(&le.Name, "leader-elect-resource-name", le.Name, "Name of the leader election Lease.")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", le.LeaseDuration, "How long a leader's lease lasts without renewal.")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", le.RenewDeadline, "How long the leader tries to renew before it gives up leading.")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", le.RetryPeriod, "Wait between attempts to acquire or renew the lease.")
}

// Complete returns the Config the options describe for rc, metrics going to reg.
func (o *Options) Complete(rc *rest.Config, reg prometheus.Registerer) (Config, error) {
	c := o.Config
	c.RESTConfig, c.Metrics = rc, reg
	c.Migrator.Mode = migrator.Mode(o.mode)
	c.LeaderElection.Disabled = !o.leaderElect
	return c, c.Validate()
}

// NewCommand returns `concord controller-manager`: the storage-migration trigger and
// migrator, leader-elected, against the server of --kubeconfig (Concord or
// Kubernetes).
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run the storage-migration controllers against an API server",
		Long: `Run the storage-version migration controllers: the trigger, which keeps a
api.StorageState per resource and starts a api.StorageVersionMigration whenever the API servers
agree on a new storage version (watching StorageVersion objects where they are served,
polling discovery elsewhere), and the migrator, which rewrites every object of the
resource in that version (on the server in batches when it is Concord, by reading and
writing back each object otherwise).

concord server runs the same controllers in-process; use this command for Kubernetes
clusters or to run them apart. Several instances elect one leader.`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd)
		},
	}
	o.AddFlags(cmd.Flags())
	gofs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gofs)
	cmd.Flags().AddGoFlag(gofs.Lookup("v"))
	return cmd
}

// errTLSPair refuses one of --tls-cert-file and --tls-private-key-file without the
// other.
var errTLSPair = errors.New("--tls-cert-file and --tls-private-key-file go together: give both or neither")

// run is the command: the identity lease and the controllers, until a signal.
func (o *Options) run(cmd *cobra.Command) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	compat, err := o.Compatibility.Complete(ctx)
	if err != nil {
		return err
	}
	id, err := o.id()
	if err != nil {
		return err
	}
	if (o.TLSCertFile == "") != (o.TLSPrivateKeyFile == "") {
		return errTLSPair
	}
	rc, err := auth.LoadKubeconfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	v := compat.Versions
	rc.WrapTransport = compatibility.WrapTransport(v.Emulation)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg, err := o.Complete(rc, reg)
	if err != nil {
		return err
	}
	cfg.NoStorageVersions = !compat.Enabled(compatibility.StorageVersionAPI)
	lease, err := identityLease(rc, id, v.Component())
	if err != nil {
		return err
	}
	components := []lifecycle.Component{
		// The lease lives as long as the controllers: it is released when they
		// return, whether for a signal or an error (it marks the lease expired).
		{Name: "identity-lease", Run: lease.Run},
		{Name: "storage-migration", Run: func(ctx context.Context) error { return Run(ctx, cfg) }},
	}
	if o.MetricsBindAddress != "" {
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return err
		}
		ms, err := newMetricsServer(ctx, o.MetricsBindAddress, o.TLSCertFile, o.TLSPrivateKeyFile, cs, reg)
		if err != nil {
			return err
		}
		components = append([]lifecycle.Component{{Name: "metrics", Run: ms.Run}}, components...)
		fmt.Fprintf(cmd.OutOrStdout(), "metrics on https://%s%s\n", ms.Addr(), metricsPath)
	}
	return runComponents(ctx, components)
}

// runComponents starts components in order and runs them until ctx is done or one
// fails, then stops them in the reverse order, each joined.
func runComponents(ctx context.Context, components []lifecycle.Component) error {
	var g lifecycle.Group
	for _, c := range components {
		if err := g.Start(ctx, c); err != nil {
			return errors.Join(err, g.Stop())
		}
	}
	select {
	case <-ctx.Done():
	case <-g.Failed():
	}
	err := g.Stop()
	if ctx.Err() != nil && errors.Is(err, lifecycle.ErrStopped) {
		return nil
	}
	return err
}

// id is --id, checked, or the default ID.
func (o *Options) id() (string, error) {
	if o.ID != "" {
		if errs := validation.IsDNS1123Subdomain(o.ID); len(errs) > 0 {
			return "", fmt.Errorf("--id %q must name a lease: %s", o.ID, strings.Join(errs, "; "))
		}
		return o.ID, nil
	}
	host, _ := os.Hostname()
	id := fmt.Sprintf("%s-%s-%s", ControllerManagerKind, strings.ToLower(host), uuid.NewString()[:8])
	if len(validation.IsDNS1123Subdomain(id)) > 0 { // a host name that cannot name a lease
		id = fmt.Sprintf("%s-%s", ControllerManagerKind, uuid.NewString()[:8])
	}
	return id, nil
}

// identityLease is the controller manager's identity lease, labelled with its kind
// and versions.
func identityLease(rc *rest.Config, id string, v wire.ComponentVersions) (*clientlease.Lease, error) {
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	labels := v.Labels()
	labels[wire.LabelControllerIdentity] = ControllerManagerKind
	// It may update leases but not delete them: the servers collect it once expired.
	return clientlease.New(clientlease.Config{Client: cs, Name: id, Labels: labels, ExpireOnRelease: true})
}
