package compatibility

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
)

// ComponentOptions are the KEP-4330 settings of a component that serves no API, a
// controller manager: its binary, emulation and minimum compatibility versions, and
// the feature gates it honours (Gates), bound to the same flags as a server's. The
// versions are resolved as a server's are; the component announces them on its
// identity lease and in the header of every request (WrapTransport).
type ComponentOptions struct {
	// Gates are the gates the component honours; any other is an unrecognized gate.
	Gates []featuregate.Feature
	// BinaryVersion, EmulationVersion, MinCompatibilityVersion and FeatureGates are
	// the raw values of the flags of the same names (see Options).
	BinaryVersion                      string
	EmulationVersion, MinCompatibility []string
	FeatureGates                       []string
}

// ComponentConfig is what ComponentOptions resolve to.
type ComponentConfig struct {
	Versions Versions
	gate     featuregate.MutableVersionedFeatureGate
}

// Enabled reports whether f is enabled; a gate the component does not honour is not.
func (c *ComponentConfig) Enabled(f featuregate.Feature) bool { return enabled(c.gate, f) }

// AddFlags binds the options to fs: --binary-version, --emulation-version (alias
// --emulated-version), --min-compatibility-version and --feature-gates.
func (o *ComponentOptions) AddFlags(fs *pflag.FlagSet) {
	gates := make([]string, len(o.Gates))
	for i, g := range o.Gates {
		gates[i] = string(g)
	}
	slices.Sort(gates)
	emulation := &listValue{items: &o.EmulationVersion, replace: true, kind: "strings"}
	fs.Var(emulation, "emulation-version", "The Kubernetes release whose behaviour the component presents (major.minor): at most the binary version and at least "+
		fmt.Sprint(SupportedSkew)+" releases below it. Default: the binary version.")
	fs.Var(emulation, "emulated-version", "Alias of --emulation-version.")
	fs.Var(&listValue{items: &o.MinCompatibility, replace: true, kind: "strings"}, "min-compatibility-version",
		"The oldest release the component must stay compatible with: at most the emulation version. Default: one release below the emulation version.")
	fs.Var(&listValue{items: &o.FeatureGates, kind: "mapStringBool"}, "feature-gates",
		"Comma-separated Name=true|false pairs, resolved at the emulation and minimum compatibility versions. Options are: "+strings.Join(gates, ", ")+", AllAlpha, AllBeta.")
	fs.StringVar(&o.BinaryVersion, "binary-version", o.BinaryVersion, "Run as a build of this older release of the built-in API catalog (major.minor).")
}

// Complete resolves the options, reporting every problem at once, one per line, in the
// words a server uses for the same flags.
func (o *ComponentOptions) Complete(ctx context.Context) (*ComponentConfig, error) {
	server := &Options{BinaryVersion: o.BinaryVersion}
	cat, errs := server.catalog()
	if cat == nil {
		_, featureErrs := parseFeatureGates(o.FeatureGates)
		return nil, errors.Join(append(errs, featureErrs...)...)
	}
	v, versionsOK, versionErrs := resolveVersions(cat, o.EmulationVersion, o.MinCompatibility)
	errs = append(errs, versionErrs...)
	values, featureErrs := parseFeatureGates(o.FeatureGates)
	errs = append(errs, featureErrs...)
	if !versionsOK || len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	gate, gateErrs := newFeatureGate(klog.FromContext(ctx), cat, v, values, append(slices.Clone(o.Gates), allAlpha, allBeta), nil)
	if len(gateErrs) > 0 {
		return nil, errors.Join(gateErrs...)
	}
	return &ComponentConfig{Versions: v, gate: gate}, nil
}
