package upgradecheck

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/compatibility"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
)

// The command's client-side limit: kubectl's for discovery.
const (
	clientQPS   = 50
	clientBurst = 300
)

// defaultStaleness is the storage-migration trigger's default staleness window.
const defaultStaleness = 10 * time.Minute

const long = `Check, before deploying release X (an upgrade or a rollback), that a server of X could
decode every object the cluster has persisted.

It reads, with --kubeconfig, the StorageStates (migration.k8s.io/v1alpha1: the storage
version hashes each resource's objects may be encoded in), the StorageVersions
(internal.apiserver.k8s.io/v1alpha1: the version each server writes now), the
CustomResourceDefinitions (status.storedVersions) and the latest StorageVersionMigration
of each resource. Hashes are resolved to versions through the API catalog (the built-in
one, or --api-catalog), and set against what a server of X emulating --emulation-version
(default X) has: every version it decodes, served or not, of every resource it serves.

A resource blocks when
  - its objects may be in a version X cannot decode: a version of its persisted hashes
    or, when they say Unknown (or it has no StorageState, or one whose heartbeat is
    older than --staleness-window), any version the catalog ever had for it;
  - servers write it now (StorageVersion) in a version X cannot decode;
  - a persisted hash matches no version the catalog knows;
  - it is a custom resource (its versions do not depend on the release) whose
    definition's status.storedVersions lists a version spec.versions no longer has;
  - its objects use a field X does not know (the API catalog records the release that
    introduced each field): a server of X would drop it from every object it writes.
    The objects of every persisted resource with such fields are read, 500 at a time,
    and the fields are named with a count and the first few objects.
And the target blocks as a whole when it is below the servers' minimum compatibility
version (their VersionSkew report): they may have written data only that release and
later read, and a server of X refuses to join them. Lower it first.

A target below the servers' binary version is a rollback, and is called one.
UNBLOCK names the remedy: the migration to the current storage version, which the
storage-migration trigger starts by itself while the servers agree (a manifest to create
one by hand is printed too); or, when X cannot decode the current storage version either,
the intermediate release to run first with --min-compatibility-version=X.

Hashes of resources the catalog does not know are resolved through the cluster's
discovery (their kinds); such resources (a kube-apiserver's Pods, Nodes, workloads) are
listed as unverified, not blocking: what X decodes of them is not known to this build.
On a kube-apiserver cluster (its /version is not Concord's) the target is judged as
kube-apiserver of X, which also decodes CustomResourceDefinitions stored in v1beta1. A
release newer than the catalog's newest is judged as that one, and says so.

A resource that X does not serve at all but that has persisted objects is a warning, not
a block: X neither reads nor writes those objects, which stay in etcd untouched until a
release that serves the resource runs again.

It also reads the servers' VersionSkew report (compatibility.concord.io/v1alpha1, kept from
the versions every server, aggregated server and controller manager announces on its
identity lease): it blocks when the control plane is outside the version skew KEP-4330
allows now, and warns when a server of X (emulating --emulation-version, min
compatibility one below it) would be outside it beside the components running now.

With --drop-key NAME (an encryption key as "<provider>:<key name>", e.g. aescbc:key1, or
"kms:<provider name>"), it answers instead (or as well, with --to-version) whether that key
can be removed from every server's --encryption-provider-config: it can once no server
writes with it (the StorageVersions' encryption.concord.io/keys) and, for every resource
it seals or opens on some server, the StorageState records that no value is sealed with
it any more (the migration to the current write key, which the trigger starts by itself
once every server writes with that key, succeeded).

Exit status: 0 when every resource is safe; 1 when one blocks, a flag is invalid, or the
cluster cannot be read.`

// options are the command's flags.
type options struct {
	to, emulation, kubeconfig, apiCatalog string
	dropKey                               string
	staleness                             time.Duration
}

// NewCommand returns `concord upgrade-check`.
func NewCommand() *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:          "upgrade-check --to-version X | --drop-key NAME",
		Short:        "Check that release X can decode every object the cluster has persisted",
		Long:         long,
		Example:      "  concord upgrade-check --kubeconfig admin.kubeconfig --to-version 1.36\n  concord upgrade-check --kubeconfig admin.kubeconfig --drop-key aescbc:key1",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	releases := ""
	if s, err := catalog.DefaultSummary(); err == nil {
		releases = fmt.Sprintf(" With the built-in catalog: %s to %s.", s.Releases[0], s.BinaryVersion())
	}
	fs := cmd.Flags()
	fs.StringVar(&o.to, "to-version", "", fmt.Sprintf("The release to upgrade or roll back to (major.minor): a release of the API catalog, or up to %d newer than its newest, judged as that one. Required.", beyondCatalog)+releases)
	fs.StringVar(&o.emulation, "emulation-version", "", fmt.Sprintf("The emulation version the servers of that release will run with: at most %d releases below --to-version (default: --to-version).", compatibility.SupportedSkew))
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Kubeconfig of the API server (default: $KUBECONFIG, ~/.kube/config, or in-cluster).")
	fs.StringVar(&o.dropKey, "drop-key", "", `An encryption key ("<provider>:<key name>", "kms:<name>") to check can be removed from every server's --encryption-provider-config.`)
	fs.StringVar(&o.apiCatalog, "api-catalog", "", "An API catalog file (JSON or YAML) to use instead of the built-in one.")
	fs.DurationVar(&o.staleness, "staleness-window", defaultStaleness,
		"A StorageState whose heartbeat is older counts as Unknown, as the storage-migration trigger resets it so (its --staleness-window); 0: never.")
	gofs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(gofs)
	fs.AddGoFlag(gofs.Lookup("v"))
	return cmd
}

func (o *options) run(ctx context.Context, out, progress io.Writer) error {
	if o.dropKey != "" && o.to == "" {
		return o.runDropKey(ctx, out)
	}
	cat, err := o.catalog()
	if err != nil {
		return err
	}
	if _, err := validateVersions(cat, o.to, o.emulation); err != nil {
		return err // before the cluster is read
	}
	c, err := o.clients()
	if err != nil {
		return err
	}
	obs, err := Read(ctx, c.dyn)
	if err != nil {
		return err
	}
	in, err := NewInput(ctx, cat, o.to, o.emulation, obs, c.discover(ctx), c.serverVersion(ctx))
	if err != nil {
		return err
	}
	in.Now, in.Staleness = time.Now(), o.staleness
	target := in.Target
	if in.FieldUses, err = scanPersisted(ctx, c.dyn, cat, obs, target, progress); err != nil {
		return err
	}
	report := Check(in)
	if err := report.Print(out); err != nil {
		return err
	}
	skew, err := CheckSkew(obs.Skew, target)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(out); err != nil {
		return err
	}
	if err := skew.Print(out); err != nil {
		return err
	}
	if o.dropKey == "" {
		return errors.Join(report.Err(), skew.Err())
	}
	keys := CheckKeyDrop(&Input{States: obs.States, StorageVersions: obs.StorageVersions, Now: time.Now(), Staleness: o.staleness}, o.dropKey)
	if _, err := fmt.Fprintln(out); err != nil {
		return err
	}
	if err := keys.Print(out); err != nil {
		return err
	}
	return errors.Join(report.Err(), skew.Err(), keys.Err())
}

// runDropKey is --drop-key alone.
func (o *options) runDropKey(ctx context.Context, out io.Writer) error {
	if o.emulation != "" || o.apiCatalog != "" {
		return fmt.Errorf("%w: --emulation-version and --api-catalog go with --to-version", ErrFlag)
	}
	obs, err := o.read(ctx)
	if err != nil {
		return err
	}
	keys := CheckKeyDrop(&Input{States: obs.States, StorageVersions: obs.StorageVersions, Now: time.Now(), Staleness: o.staleness}, o.dropKey)
	if err := keys.Print(out); err != nil {
		return err
	}
	return keys.Err()
}

// clusterClients are the clients of the cluster --kubeconfig names.
type clusterClients struct {
	dyn       dynamic.Interface
	discovery discovery.DiscoveryInterface
}

func (o *options) clients() (*clusterClients, error) {
	rc, err := auth.LoadKubeconfig(o.kubeconfig)
	if err != nil {
		return nil, err
	}
	// client-go's default limit (5 a second, 10 at once) made the check wait about 5 s
	// on a fresh cluster, for no one's sake: its reads go one at a time. It reads as
	// kubectl discovers (50 a second, 300 at once); the server's priority and fairness
	// still governs.
	rc.QPS, rc.Burst = clientQPS, clientBurst
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &clusterClients{dyn: dyn, discovery: disc}, nil
}

// serverVersion is the gitVersion of the server answering /version ("" if it cannot
// say: the fleet's release is then unknown, which only changes the wording).
func (c *clusterClients) serverVersion(ctx context.Context) string {
	info, err := c.discovery.ServerVersion()
	if err != nil {
		klog.FromContext(ctx).V(2).Info("The server's /version cannot be read", "err", err)
		return ""
	}
	return info.GitVersion
}

// NewInput builds what Check decides from, but for the time (Now, Staleness) and the
// fields objects use (FieldUses): the target release to (emulating emulation, "" for
// to) and its step releases, as kube-apiserver has them when the fleet is one, what was
// read of the cluster (obs, its discovery, the gitVersion of its /version).
func NewInput(ctx context.Context, cat *catalog.Catalog, to, emulation string, obs *Observed, discovered map[schema.GroupResource]Discovered, serverVersion string) (Input, error) {
	tv, err := validateVersions(cat, to, emulation)
	if err != nil {
		return Input{}, err
	}
	target, steps, err := tv.releases(ctx, cat)
	if err != nil {
		return Input{}, oneLine{fmt.Errorf("release %s, emulation %s: %w", tv.to, tv.emulation, err)}
	}
	fleet, err := FleetOf(obs.Skew, serverVersion)
	if err != nil {
		return Input{}, err
	}
	if fleet.Kube {
		target = target.AsKubeAPIServer()
		for i := range steps {
			steps[i] = steps[i].AsKubeAPIServer()
		}
	}
	return Input{
		Target: target, Steps: steps, Catalog: KnownResources(cat), Fleet: fleet, JudgedAs: tv.judgedAs, Discovered: discovered,
		States: obs.States, StorageVersions: obs.StorageVersions, CRDs: obs.CRDs, Migrations: obs.Migrations,
	}, nil
}

// discover is Discover; groups whose discovery fails (an aggregated server down) are
// left out, their hashes then unresolved, which the report says.
func (c *clusterClients) discover(ctx context.Context) map[schema.GroupResource]Discovered {
	out, err := Discover(c.discovery)
	if err != nil {
		klog.FromContext(ctx).Info("Discovery is incomplete; the hashes of what it misses stay unresolved", "err", err)
	}
	return out
}

// Discover lists the kinds and served versions of every resource a cluster serves
// (subresources left out). An error says what discovery missed; what it found is
// returned with it.
func Discover(disc discovery.DiscoveryInterface) (map[schema.GroupResource]Discovered, error) {
	_, lists, err := disc.ServerGroupsAndResources()
	out := map[schema.GroupResource]Discovered{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			gr := schema.GroupResource{Group: gv.Group, Resource: r.Name}
			d := out[gr]
			d.Kind, d.Versions = r.Kind, appendMissing(d.Versions, gv.Version)
			out[gr] = d
		}
	}
	return out, err
}

// read reads the cluster --kubeconfig names.
func (o *options) read(ctx context.Context) (*Observed, error) {
	c, err := o.clients()
	if err != nil {
		return nil, err
	}
	return Read(ctx, c.dyn)
}

// scanPersisted reads the objects of every persisted resource the target serves and
// whose versions have fields the target does not know (NewFields), and returns the
// fields they use.
func scanPersisted(ctx context.Context, dyn dynamic.Interface, cat *catalog.Catalog, obs *Observed, target Release, progress io.Writer) (map[schema.GroupResource][]FieldUse, error) {
	fields, err := NewFields(cat, target.Binary)
	if err != nil {
		return nil, err
	}
	for gr := range fields {
		_, served := target.Resources[gr]
		_, state := obs.States[gr]
		_, sv := obs.StorageVersions[gr]
		if !served || (!state && !sv) {
			delete(fields, gr)
		}
	}
	return ScanFields(ctx, dyn, fields, progress)
}

// catalog returns the full API catalog: --api-catalog's, or the built-in one.
func (o *options) catalog() (*catalog.Catalog, error) {
	if o.apiCatalog == "" {
		return catalog.Default()
	}
	cat, err := catalog.Load(o.apiCatalog)
	if err != nil {
		return nil, oneLine{fmt.Errorf("%w: --api-catalog %s: %w", ErrFlag, o.apiCatalog, err)}
	}
	return cat, nil
}

// oneLine is an error whose message is err's on one line (errors.Join's lines joined
// with "; ").
type oneLine struct{ err error }

func (e oneLine) Error() string { return strings.ReplaceAll(e.err.Error(), "\n", "; ") }
func (e oneLine) Unwrap() error { return e.err }
