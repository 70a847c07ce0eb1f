// Package compatibility decides, from the API catalog and a server's flags, what
// KEP-4330 (compatibility versions) makes of the server: which release it is (binary),
// which it presents (emulation), which it must stay readable by (minimum
// compatibility), which feature gates are on, which API versions it serves, and which
// version it stores each resource in.
//
// # What it owns
//
//   - The flags: --emulation-version (alias --emulated-version),
//     --min-compatibility-version, --feature-gates, --runtime-config,
//     --emulation-forward-compatible, --runtime-config-emulation-forward-compatible,
//     --api-catalog and --binary-version (Options). Values stay raw until Validate or
//     Complete, which report every problem at once, one line each, in kube-apiserver's
//     words where it has them.
//   - Feature gates: component-base's versioned gate fed with the catalog's specs,
//     resolved at (emulation, minimum compatibility), with Concord's own gates
//     (APIServerIdentity, StorageVersionAPI) and their dependency. Every gate the
//     catalog lists is one Concord honours (the constants say what each switches).
//   - API enablement: default (with the APIs features bring or guard), --runtime-config, removal and introduction at the
//     emulation version, and both forward-compatible modes.
//   - The storage rule (StorageVersion). A resource is stored in the newest version
//     (Kubernetes-aware order) that every release in [minCompatibility, emulation+1]
//     supports, so that a rollback to any release down to minCompatibility, and the
//     next release up, can read what this server writes. Releases in that window that do
//     not know the resource at all do not constrain it (they cannot serve it whatever the
//     encoding). No qualifying version is an error naming the resource, never a silent
//     fallback.
//   - /version fields (Config.VersionInfo), the version_info and
//     kubernetes_feature_enabled metrics (Config.RegisterMetrics), and version skew
//     detection: a header Concord's clients send (WrapTransport) and a server filter
//     that counts clients outside the allowed skew (Config.ClientSkewFilter).
//
// # What it must not touch
//
// The package decides; it does not serve. It must not import server or storage: the
// registry resources it builds (Config.Resources) carry its decisions to them. Facts
// about releases (what was introduced and removed when, feature gate histories) belong
// to the catalog package.
//
// # Usage
//
//	o := compatibility.NewOptions()
//	o.AddFlags(fs)                  // after fs.Parse:
//	cfg, err := o.Complete(ctx)     // every flag problem, one per line
//	if err != nil { ... }
//	resources, err := cfg.Resources() // served resources, storage versions chosen
//	if cfg.Enabled(compatibility.StorageVersionAPI) { ... }
//	info := cfg.VersionInfo(version.Info{GitCommit: commit})
//	err = cfg.RegisterMetrics(registry)
//	skew, err := cfg.ClientSkewFilter(registry) // wrap the handler chain
//	restConfig.WrapTransport = compatibility.WrapTransport(cfg.ClientVersion())
//
// docs/compatibility.md describes the behaviour for operators, and every place where
// Concord follows the KEP rather than kube-apiserver.
package compatibility
