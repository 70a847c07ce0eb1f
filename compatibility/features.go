package compatibility

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	"github.com/concordproject/concord/catalog"
)

// The feature gates Concord itself honours. Their histories (featuregate.VersionedSpecs)
// come from the API catalog, which must define them.
const (
	// APIServerIdentity: every server keeps an identity lease in kube-system.
	APIServerIdentity featuregate.Feature = "APIServerIdentity"
	// StorageVersionAPI: servers publish the encoding versions they write in
	// (internal.apiserver.k8s.io StorageVersions) and writes wait until they have. It
	// depends on APIServerIdentity, whose leases name the servers.
	StorageVersionAPI featuregate.Feature = "StorageVersionAPI"
	// CRDValidationRatcheting: an update of a custom resource is not refused for
	// schema or x-kubernetes-validations errors in values it leaves unchanged. Off, an
	// update is validated as a create is (transition rules still see oldSelf).
	CRDValidationRatcheting featuregate.Feature = "CRDValidationRatcheting"
	// MutatingAdmissionPolicy: the MutatingAdmissionPolicy API is served by default and
	// admission applies the policies. Off, neither.
	MutatingAdmissionPolicy featuregate.Feature = "MutatingAdmissionPolicy"
	// WatchList: a watch may ask for its starting state (sendInitialEvents). Off, such
	// a watch is refused as Kubernetes refuses it.
	WatchList featuregate.Feature = "WatchList"
	// CBORServingAndStorage: request and response bodies may be CBOR
	// (application/cbor, KEP-4222). Off, a CBOR body is refused (415) and CBOR is not
	// offered, as kube-apiserver does.
	CBORServingAndStorage featuregate.Feature = "CBORServingAndStorage"
)

// The special gates of component-base that switch every alpha or beta feature.
const (
	allAlpha featuregate.Feature = "AllAlpha"
	allBeta  featuregate.Feature = "AllBeta"
)

// ownFeatures are the gates the catalog must define, because Concord's code asks them.
// The other gates Concord honours (CBORServingAndStorage, CRDValidationRatcheting,
// MutatingAdmissionPolicy, WatchList) are Kubernetes' and may be missing from a catalog of an older release: the
// feature is then disabled (enabled).
var ownFeatures = []featuregate.Feature{APIServerIdentity, StorageVersionAPI}

// addKubeGates adds to gates those of kube that gates lacks and that are honoured,
// and returns their dependencies among those it added.
func addKubeGates(gates map[featuregate.Feature]featuregate.VersionedSpecs, kube featuregate.FeatureGate, honoured func(featuregate.Feature) bool) map[featuregate.Feature][]featuregate.Feature {
	if kube == nil {
		return nil
	}
	added := map[featuregate.Feature]bool{}
	for f, specs := range kube.DeepCopy().GetAllVersioned() {
		if _, ok := gates[f]; !ok && honoured(f) && f != allAlpha && f != allBeta {
			gates[f], added[f] = specs, true
		}
	}
	deps := map[featuregate.Feature][]featuregate.Feature{}
	for f, d := range kube.Dependencies() {
		if added[f] {
			// Only among kube's own: the catalog's gates have Concord's histories (its
			// APIServerIdentity was alpha before kube's gates that need it were beta).
			deps[f] = slices.DeleteFunc(slices.Clone(d), func(g featuregate.Feature) bool { return !added[g] })
		}
	}
	return deps
}

// enabled reports whether f is enabled in gate; a gate gate does not know is disabled.
func enabled(gate featuregate.MutableVersionedFeatureGate, f featuregate.Feature) bool {
	if _, known := gate.GetAll()[f]; !known {
		return false
	}
	return gate.Enabled(f)
}

// featureDependencies says which features need which others; enabling a feature while
// one it needs is disabled is a start-up error.
var featureDependencies = map[featuregate.Feature][]featuregate.Feature{
	StorageVersionAPI: {APIServerIdentity},
}

// featureAPIs are the resources a feature works through. While the feature is enabled,
// the versions of these resources that exist at the emulation version are served by
// default (whatever their stability: the API is as stable as the feature that brings
// it), and disabling all of them with --runtime-config is a start-up error.
var featureAPIs = map[featuregate.Feature][]schema.GroupResource{
	APIServerIdentity: {{Group: "coordination.k8s.io", Resource: "leases"}},
	StorageVersionAPI: {{Group: "internal.apiserver.k8s.io", Resource: "storageversions"}},
}

// featureGuardedAPIs are the resources a feature guards: while the feature is disabled,
// none of their versions is served by default (--runtime-config may still switch them
// on); while it is enabled, the usual defaults apply.
var featureGuardedAPIs = map[featuregate.Feature][]schema.GroupResource{
	MutatingAdmissionPolicy: {
		{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"},
		{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicybindings"},
	},
}

// parseFeatureGates parses --feature-gates items ("Name=true", optionally "kube:Name=true",
// possibly comma-separated) into a map, later items winning. Every malformed item is
// reported, in component-base's words.
func parseFeatureGates(items []string) (map[string]bool, []error) {
	out := map[string]bool{}
	var errs []error
	for _, value := range items {
		for item := range strings.SplitSeq(value, ",") {
			if strings.TrimSpace(item) == "" {
				continue
			}
			k, v, found := strings.Cut(item, "=")
			k = strings.TrimSpace(k)
			if component, name, ok := strings.Cut(k, ":"); ok {
				if component = strings.TrimSpace(component); component != Component && component != "" {
					errs = append(errs, fmt.Errorf("component not registered: %s", component))
					continue
				}
				k = strings.TrimSpace(name)
			}
			if !found {
				errs = append(errs, fmt.Errorf("missing bool value for %s", k))
				continue
			}
			v = strings.TrimSpace(v)
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("invalid value of %s=%s, err: %w", k, v, err))
				continue
			}
			out[k] = b
		}
	}
	return out, errs
}

// newFeatureGate builds the feature gate of a server at v: the catalog's gates, Concord's
// dependencies between them, and the values set on the command line, resolved at
// (v.Emulation, v.MinCompatibility) by component-base. It reports every problem: each
// unknown gate, each value component-base refuses (locked, not yet existing at the
// emulation version), each broken dependency and, since Concord follows the KEP there,
// each alpha feature enabled while emulating an older release. only, if not nil,
// restricts the gates to those a component honours (the others are unrecognized).
// kube, if not nil, adds the gates of Kubernetes' code the server runs that the
// catalog does not define, with their dependencies.
func newFeatureGate(logger klog.Logger, cat *catalog.Catalog, v Versions, set map[string]bool, only []featuregate.Feature, kube featuregate.FeatureGate) (featuregate.MutableVersionedFeatureGate, []error) {
	gate := featuregate.NewVersionedFeatureGateWithMinCompatibility(v.Emulation, v.MinCompatibility)
	gates := cat.FeatureGates()
	honoured := func(f featuregate.Feature) bool { return only == nil || slices.Contains(only, f) }
	maps.DeleteFunc(gates, func(f featuregate.Feature, _ featuregate.VersionedSpecs) bool { return !honoured(f) })
	var errs []error
	for _, f := range ownFeatures {
		if _, ok := gates[f]; !ok && honoured(f) {
			errs = append(errs, fmt.Errorf("the API catalog does not define feature gate %s, which Concord honours", f))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	kubeDeps := addKubeGates(gates, kube, honoured)
	if err := gate.AddVersioned(gates); err != nil {
		return nil, []error{fmt.Errorf("the API catalog's feature gates: %w", err)}
	}
	deps := make(map[featuregate.Feature][]featuregate.Feature, len(featureDependencies)+len(kubeDeps))
	maps.Copy(deps, kubeDeps)
	for f, d := range featureDependencies {
		if honoured(f) {
			deps[f] = slices.DeleteFunc(slices.Clone(d), func(f featuregate.Feature) bool { return !honoured(f) })
		}
	}
	if err := gate.AddDependencies(deps); err != nil {
		return nil, []error{fmt.Errorf("the API catalog's feature gates: %w", err)}
	}

	// component-base stops at the first unknown gate, and checks dependencies only
	// when every value could be set. Check the values here, against the specs it
	// resolved, to report every problem in its words; then let it set the valid ones
	// and check the dependencies.
	known := gate.GetAllVersioned()
	atEmulation := gate.GetAll() // features that exist at (emulation, min compatibility)
	valid := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(set)) {
		value, f := set[name], featuregate.Feature(name)
		spec, exists := atEmulation[f]
		switch _, registered := known[f]; {
		case !registered:
			errs = append(errs, fmt.Errorf("unrecognized feature gate: %s", name))
		case !exists:
			errs = append(errs, fmt.Errorf("cannot set feature gate %v to %v, feature is PreAlpha at emulated version %s, min compatibility version %s", name, value, v.Emulation, v.MinCompatibility))
		case spec.LockToDefault && spec.Default != value:
			errs = append(errs, fmt.Errorf("cannot set feature gate %v to %v, feature is locked to %v", name, value, spec.Default))
		default:
			valid[name] = value
		}
	}
	if err := gate.SetFromMapWithLogger(logger, valid); err != nil {
		// Validate gives the errors SetFromMap joined one by one; sort them, as
		// component-base finds them in map order.
		more := gate.Validate()
		slices.SortFunc(more, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		errs = append(errs, more...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	gate.Close()

	if v.Emulation.LessThan(v.Binary) {
		var alpha []string
		for name, spec := range gate.GetAll() {
			if name != allAlpha && name != allBeta && spec.PreRelease == featuregate.Alpha && gate.Enabled(name) {
				alpha = append(alpha, string(name))
			}
		}
		if len(alpha) > 0 {
			slices.Sort(alpha)
			return nil, []error{fmt.Errorf("alpha features %v cannot be enabled with emulation version %s, lower than the binary version %s: disable them or emulate %s",
				alpha, v.Emulation, v.Binary, v.Binary)}
		}
	}
	return gate, nil
}
