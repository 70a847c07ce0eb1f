package compatibility

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	"github.com/concordproject/concord/catalog"
)

// Options are the compatibility settings of a server, bound to its flags. The zero value
// (or NewOptions) is a server of the built-in catalog's release with every default.
// Values are kept raw until Validate or Complete, so that every problem is reported at
// once rather than the first one a flag parser meets.
type Options struct {
	// APICatalog is a catalog file (JSON or YAML, see catalog.Load) that replaces the
	// built-in catalog (--api-catalog).
	APICatalog string
	// Catalog, if set and APICatalog is empty, replaces the built-in catalog: for
	// in-process servers and tests that build one with catalog.New.
	Catalog *catalog.Catalog
	// BinaryVersion, if set, makes the server a build of that older release of the
	// catalog (--binary-version): the catalog is truncated to it (catalog.Truncate).
	BinaryVersion string
	// EmulationVersion holds the values of --emulation-version (alias
	// --emulated-version): "1.36", "v1.36" or "kube=1.36". Empty: the binary version.
	EmulationVersion []string
	// MinCompatibilityVersion holds the values of --min-compatibility-version, in the
	// same forms. Empty: emulation-1, or the emulation version at the bottom of the
	// supported range.
	MinCompatibilityVersion []string
	// KubeGates are the feature gates of Kubernetes' own code the server runs (package
	// kubesemantics), with their histories and dependencies: honoured beside the
	// catalog's, resolved at the same versions (the catalog's own history of a gate
	// both define wins). Nil: the catalog's alone.
	KubeGates featuregate.FeatureGate
	// FeatureGates holds "Name=bool" items (optionally "kube:Name=bool"), in flag
	// order; a later item for the same gate wins (--feature-gates, repeatable).
	FeatureGates []string
	// RuntimeConfig holds "key[=bool]" items in flag order, a later item for the same
	// key winning (--runtime-config, repeatable). Keys: api/all, api/ga, api/beta,
	// api/alpha, <group>/<version> (v1 or api/v1 for the core group) and
	// <group>/<version>/<resource>; a missing value means true.
	RuntimeConfig []string
	// EmulationForwardCompatible serves, with an older emulation version, the newer
	// versions of every beta or GA API served at the emulation version
	// (--emulation-forward-compatible).
	EmulationForwardCompatible bool
	// RuntimeConfigEmulationForwardCompatible lets --runtime-config switch on, by name,
	// versions introduced after the emulation version
	// (--runtime-config-emulation-forward-compatible).
	RuntimeConfigEmulationForwardCompatible bool
}

// NewOptions returns the defaults: no flag set.
func NewOptions() *Options {
	return &Options{}
}

// AddFlags binds the options to fs. The help texts give the ranges and gates of the
// built-in catalog; --api-catalog and --binary-version change them.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	emulationRange, gates := "", ""
	if s, err := catalog.DefaultSummary(); err == nil {
		binary := s.BinaryVersion()
		emulationRange = fmt.Sprintf(" Options are: %s=%s..%s (default %s) with the built-in API catalog.", Component, floor(s.Releases[0], binary), binary, binary)
		gates = " Options are: " + strings.Join(s.FeatureGates, ", ") + ", AllAlpha, AllBeta"
		if o.KubeGates != nil {
			gates += fmt.Sprintf(", and the %d gates of kube-apiserver %s", len(o.KubeGates.DeepCopy().GetAllVersioned()), binary)
		}
		gates += "."
	}
	emulation := &listValue{items: &o.EmulationVersion, replace: true, kind: "strings"}
	fs.Var(emulation, "emulation-version", "The Kubernetes release whose APIs and features the server presents (major.minor, e.g. 1.36 or kube=1.36): "+
		"at most the binary version and at least "+fmt.Sprint(SupportedSkew)+" releases below it. Default: the binary version."+emulationRange)
	fs.Var(emulation, "emulated-version", "Alias of --emulation-version (the spelling kube-apiserver uses).")
	fs.Var(&listValue{items: &o.MinCompatibilityVersion, replace: true, kind: "strings"}, "min-compatibility-version",
		"The oldest release the server's data must stay readable by (rollback target): at most the emulation version, within the same range. "+
			"Storage versions and features with compatibility implications follow it. Default: one release below the emulation version.")
	fs.Var(&listValue{items: &o.FeatureGates, kind: "mapStringBool"}, "feature-gates",
		"Comma-separated Name=true|false pairs, resolved at the emulation and minimum compatibility versions. Repeatable; a later value for the same gate wins."+gates)
	fs.Var(&listValue{items: &o.RuntimeConfig, kind: "mapStringString"}, "runtime-config",
		"Comma-separated key=true|false pairs that switch built-in API versions on or off: api/all, api/ga, api/beta, api/alpha, "+
			"<group>/<version> (v1 for the core group) or <group>/<version>/<resource>. A key alone means true. Repeatable; the most specific key wins.")
	fs.BoolVar(&o.EmulationForwardCompatible, "emulation-forward-compatible", o.EmulationForwardCompatible,
		"With an emulation version below the binary version, also serve the newer versions (introduced after the emulation version) of every beta or GA API served at it.")
	fs.BoolVar(&o.RuntimeConfigEmulationForwardCompatible, "runtime-config-emulation-forward-compatible", o.RuntimeConfigEmulationForwardCompatible,
		"With an emulation version below the binary version, let --runtime-config switch on, by group/version or group/version/resource, API versions introduced after the emulation version; "+
			"without it, doing so is an error.")
	fs.StringVar(&o.APICatalog, "api-catalog", o.APICatalog, "An API catalog file (JSON or YAML) to use instead of the built-in one.")
	fs.StringVar(&o.BinaryVersion, "binary-version", o.BinaryVersion,
		"Run as a build of this older release of the API catalog (major.minor): the catalog is cut at that release.")
}

// Validate resolves the options as Complete does and reports every problem, one per
// line (errors.Join), without logging.
func (o *Options) Validate() error {
	_, err := o.complete(logr.Discard())
	return err
}

// Complete resolves the options into the server's Config: catalog, versions, feature
// gate, API enablement and storage versions. Every problem is reported, each as one line
// saying what is wrong and what is allowed, joined with errors.Join; a resource without
// a storage version wraps ErrNoStorageVersion. Warnings (deprecated or GA gates set) go
// to the context's logger.
func (o *Options) Complete(ctx context.Context) (*Config, error) {
	return o.complete(klog.FromContext(ctx))
}

func (o *Options) complete(logger klog.Logger) (*Config, error) {
	a, errs := o.resolveAPIs(logger)
	if a == nil {
		return nil, errors.Join(errs...)
	}
	servedResources := map[schema.GroupResource]bool{}
	for gvr := range a.served {
		servedResources[gvr.GroupResource()] = true
	}
	storage, storageErrs := storageVersions(a.catalog, a.versions, servedResources)
	errs = append(errs, storageErrs...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &Config{Catalog: a.catalog, Versions: a.versions, gate: a.gate, served: a.served, storage: storage}, nil
}

// resolvedAPIs is what the options make of a server before storage versions are chosen:
// its catalog, versions, feature gate and served group-version-resources.
type resolvedAPIs struct {
	catalog  *catalog.Catalog
	versions Versions
	gate     featuregate.MutableVersionedFeatureGate
	served   sets.Set[schema.GroupVersionResource]
}

// resolveAPIs resolves everything Complete does but the storage versions, and reports
// every problem found on the way, in flag order: versions, feature gates,
// runtime-config, then what API enablement makes of them. It returns nil when a problem
// leaves the served APIs undecidable; otherwise the served set is enablement's decision
// even if errs is not empty (a server with errs does not start).
func (o *Options) resolveAPIs(logger klog.Logger) (*resolvedAPIs, []error) {
	cat, errs := o.catalog()
	if cat == nil {
		_, featureErrs := parseFeatureGates(o.FeatureGates)
		return nil, append(errs, featureErrs...)
	}

	v, versionsOK, versionErrs := resolveVersions(cat, o.EmulationVersion, o.MinCompatibilityVersion)
	errs = append(errs, versionErrs...)
	if versionsOK && v.Emulation.EqualTo(v.Binary) {
		if o.EmulationForwardCompatible {
			errs = append(errs, errors.New("ServerRunOptions.EmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version"))
		}
		if o.RuntimeConfigEmulationForwardCompatible {
			errs = append(errs, errors.New("ServerRunOptions.RuntimeConfigEmulationForwardCompatible cannot be set to true if the emulation version is the same as the binary version"))
		}
	}
	featureValues, featureErrs := parseFeatureGates(o.FeatureGates)
	errs = append(errs, featureErrs...)
	var gate featuregate.MutableVersionedFeatureGate
	if versionsOK && len(featureErrs) == 0 {
		var gateErrs []error
		gate, gateErrs = newFeatureGate(logger, cat, v, featureValues, nil, o.KubeGates)
		errs = append(errs, gateErrs...)
	}
	rc, rcErrs := parseRuntimeConfig(cat, o.RuntimeConfig)
	errs = append(errs, rcErrs...)
	if gate == nil || len(rcErrs) > 0 {
		return nil, errs
	}

	served, apiErrs := enablement(cat, v, gate, rc, o.EmulationForwardCompatible, o.RuntimeConfigEmulationForwardCompatible)
	errs = append(errs, apiErrs...)
	return &resolvedAPIs{catalog: cat, versions: v, gate: gate, served: served}, errs
}

// catalog returns the catalog the options select, truncated to --binary-version.
func (o *Options) catalog() (*catalog.Catalog, []error) {
	var (
		cat *catalog.Catalog
		err error
	)
	switch {
	case o.APICatalog != "":
		if cat, err = catalog.Load(o.APICatalog); err != nil {
			return nil, []error{fmt.Errorf("--api-catalog: %w", err)}
		}
	case o.Catalog != nil:
		cat = o.Catalog
	default:
		if cat, err = catalog.Default(); err != nil {
			return nil, []error{fmt.Errorf("the built-in API catalog: %w", err)}
		}
	}
	if o.BinaryVersion == "" {
		return cat, nil
	}
	rel, err := parseRelease(o.BinaryVersion)
	if err != nil {
		return nil, []error{fmt.Errorf("--binary-version %q: %w", o.BinaryVersion, err)}
	}
	if cat, err = cat.Truncate(rel); err != nil {
		return nil, []error{fmt.Errorf("--binary-version %s: %w", rel, err)}
	}
	return cat, nil
}

// listValue is a pflag.Value that collects raw comma-separated items. With replace, the
// first Set replaces the defaults (as pflag's string slices do) and later ones append;
// without, every Set appends (merging flags). One listValue may back several flag names
// (aliases), which then share the slice.
type listValue struct {
	items   *[]string
	replace bool
	changed bool
	kind    string
}

func (l *listValue) String() string {
	if l.items == nil {
		return ""
	}
	return strings.Join(*l.items, ",")
}

func (l *listValue) Set(value string) error {
	var parsed []string
	for item := range strings.SplitSeq(value, ",") {
		if item = strings.TrimSpace(item); item != "" {
			parsed = append(parsed, item)
		}
	}
	if l.replace && !l.changed {
		*l.items = nil
	}
	l.changed = true
	*l.items = append(*l.items, parsed...)
	return nil
}

func (l *listValue) Type() string { return l.kind }
