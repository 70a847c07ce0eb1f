package compatibility

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/concordproject/concord/catalog"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
)

// betaOffByDefaultSince is the first release whose new beta API versions are not served
// by default (Kubernetes' policy since KEP-3136): a beta version introduced before it is
// served unless --runtime-config disables it, one introduced at or after it only when
// --runtime-config enables it.
var betaOffByDefaultSince = version.MajorMinor(1, 24)

// stability is the maturity an API version's name announces.
type stability string

const (
	ga    stability = "ga"
	beta  stability = "beta"
	alpha stability = "alpha"
)

var (
	betaName  = regexp.MustCompile(`^v[0-9]+beta[0-9]+$`)
	alphaName = regexp.MustCompile(`^v[0-9]+alpha[0-9]+$`)
)

// stabilityOf returns the stability of a version name: v1 is GA, v2beta1 beta, v1alpha1
// alpha.
func stabilityOf(name string) stability {
	switch {
	case alphaName.MatchString(name):
		return alpha
	case betaName.MatchString(name):
		return beta
	}
	return ga
}

// runtimeConfig is --runtime-config parsed: the switches at every level, the most
// specific winning (resource, then group-version, then api/<stability>, then api/all).
type runtimeConfig struct {
	all       *bool
	stability map[stability]bool
	versions  map[schema.GroupVersion]bool
	resources map[schema.GroupVersionResource]bool
}

// explicit reports whether the group-version or resource of gvr is switched by name, and
// to what (a resource switch wins over its version's).
func (rc *runtimeConfig) explicit(gvr schema.GroupVersionResource) (enabled, set bool) {
	if e, ok := rc.resources[gvr]; ok {
		return e, true
	}
	if e, ok := rc.versions[gvr.GroupVersion()]; ok {
		return e, true
	}
	return false, false
}

// configured returns whether gvr is switched on, given whether it would be without any
// --runtime-config.
func (rc *runtimeConfig) configured(gvr schema.GroupVersionResource, byDefault bool) bool {
	if e, ok := rc.explicit(gvr); ok {
		return e
	}
	if e, ok := rc.stability[stabilityOf(gvr.Version)]; ok {
		return e
	}
	if rc.all != nil {
		return *rc.all
	}
	return byDefault
}

// parseRuntimeConfig parses --runtime-config items ("key" or "key=bool", possibly
// comma-separated; later items win) against the group-versions and resources the
// catalog knows. Every problem is reported.
func parseRuntimeConfig(cat *catalog.Catalog, items []string) (*runtimeConfig, []error) {
	known := knownAPIsOf(cat)
	rc := &runtimeConfig{
		stability: map[stability]bool{},
		versions:  map[schema.GroupVersion]bool{},
		resources: map[schema.GroupVersionResource]bool{},
	}
	var (
		errs          []error
		unknownGroups = sets.New[string]()
		keys          = sets.New[string]()
	)
	for _, value := range items {
		for item := range strings.SplitSeq(value, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			key, raw, _ := strings.Cut(item, "=")
			key, raw = strings.TrimSpace(key), strings.TrimSpace(raw)
			enabled := true
			if raw != "" {
				b, err := strconv.ParseBool(raw)
				if err != nil {
					errs = append(errs, fmt.Errorf("invalid value of %s: %s, err: %w", key, raw, err))
					continue
				}
				enabled = b
			}
			keys.Insert(key)
			if err := rc.set(known, key, enabled, unknownGroups); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if unknownGroups.Len() > 0 {
		errs = append(errs, fmt.Errorf("unknown api groups %s", strings.Join(sets.List(unknownGroups), ",")))
	}
	if keys.Len() == 1 && keys.Has("api/all") && !*rc.all {
		errs = append(errs, fmt.Errorf("invalid runtime-config with only api/all=false"))
	}
	return rc, errs
}

// knownAPIs is what --runtime-config may name: the catalog's groups, group-versions and
// resources.
type knownAPIs struct {
	groups    sets.Set[string]
	versions  sets.Set[schema.GroupVersion]
	resources sets.Set[schema.GroupVersionResource]
}

func knownAPIsOf(cat *catalog.Catalog) knownAPIs {
	k := knownAPIs{sets.New[string](), sets.New[schema.GroupVersion](), sets.New[schema.GroupVersionResource]()}
	for _, r := range cat.Resources() {
		k.groups.Insert(r.Group)
		for _, v := range r.Versions {
			k.versions.Insert(schema.GroupVersion{Group: r.Group, Version: v.Name})
			k.resources.Insert(schema.GroupVersionResource{Group: r.Group, Version: v.Name, Resource: r.Names.Plural})
		}
	}
	return k
}

// set records one switch. Groups the catalog does not know are collected in
// unknownGroups, to be reported together.
func (rc *runtimeConfig) set(known knownAPIs, key string, enabled bool, unknownGroups sets.Set[string]) error {
	switch key {
	case "api/all":
		rc.all = &enabled
		return nil
	case "api/ga", "api/beta", "api/alpha":
		rc.stability[stability(strings.TrimPrefix(key, "api/"))] = enabled
		return nil
	case "api/legacy":
		// Deprecated in Kubernetes and without effect there; accepted alike.
		return nil
	}
	gv, resource, err := parseRuntimeConfigKey(key)
	if err != nil {
		return err
	}
	switch {
	case !known.groups.Has(gv.Group) && gv.Group == "":
		unknownGroups.Insert("core")
	case !known.groups.Has(gv.Group):
		unknownGroups.Insert(gv.Group)
	case !known.versions.Has(gv):
		return fmt.Errorf("group version %s that has not been registered", gv)
	case resource == "":
		rc.versions[gv] = enabled
	case !known.resources.Has(gv.WithResource(resource)):
		return fmt.Errorf("group version resource %s that has not been registered", gv.WithResource(resource))
	default:
		rc.resources[gv.WithResource(resource)] = enabled
	}
	return nil
}

// parseRuntimeConfigKey reads <group>/<version>[/<resource>], where the core group is
// written <version> or api/<version>.
func parseRuntimeConfigKey(key string) (schema.GroupVersion, string, error) {
	parts := strings.Split(key, "/")
	if len(parts) > 3 || slices.Contains(parts, "") {
		return schema.GroupVersion{}, "", fmt.Errorf("invalid runtime-config key %q: use api/all, api/ga, api/beta, api/alpha, <group>/<version> or <group>/<version>/<resource>", key)
	}
	var resource string
	if len(parts) == 3 {
		resource = parts[2]
	}
	switch {
	case len(parts) == 1: // "v1": the core group
		return schema.GroupVersion{Version: parts[0]}, "", nil
	case parts[0] == "api": // "api/v1[/resource]": the core group too
		return schema.GroupVersion{Version: parts[1]}, resource, nil
	}
	return schema.GroupVersion{Group: parts[0], Version: parts[1]}, resource, nil
}

// enablement decides which versions of which catalog resources a server at v serves,
// given its feature gate and --runtime-config, as KEP-4330 has it:
//
//  1. By default GA versions are served, beta versions introduced before
//     betaOffByDefaultSince, and the versions of resources an enabled feature works
//     through (featureAPIs), except the resources a disabled feature guards
//     (featureGuardedAPIs); --runtime-config switches versions on and off, the most
//     specific switch winning.
//  2. With forwardCompatible (--emulation-forward-compatible), every version of a
//     resource newer than one of its switched-on beta or GA versions is switched on too,
//     unless --runtime-config switches it off by name.
//  3. Versions removed at or before the emulation version are not served. Versions
//     introduced after it are served only if a lower-priority beta or GA version of the
//     same resource is served and forwardCompatible is set, or if --runtime-config
//     switches them on by name and runtimeConfigForwardCompatible
//     (--runtime-config-emulation-forward-compatible) is set; switching them on by name
//     without it is an error.
//  4. Emulating an older release, no alpha version may be served (except the API of a
//     feature past alpha), and every enabled feature must have its API.
func enablement(cat *catalog.Catalog, v Versions, gate featuregate.MutableVersionedFeatureGate, rc *runtimeConfig, forwardCompatible, runtimeConfigForwardCompatible bool) (sets.Set[schema.GroupVersionResource], []error) {
	e := &enabler{
		v: v, rc: rc, forwardCompatible: forwardCompatible, runtimeConfigForwardCompatible: runtimeConfigForwardCompatible,
		byFeature: featureResources(gate),
		guarded:   guardedOff(gate),
		served:    sets.New[schema.GroupVersionResource](),
		outcomes:  map[schema.GroupVersion]*gvOutcome{},
	}
	for gv, on := range rc.versions {
		if on {
			e.outcomes[gv] = &gvOutcome{}
		}
	}
	for _, r := range cat.Resources() {
		e.resource(r)
	}
	e.versionErrors()
	e.alphaErrors()
	e.featureErrors(gate)
	return e.served, e.errs
}

// featureResources returns the resources brought by an enabled feature, and whether
// that feature is past alpha.
func featureResources(gate featuregate.MutableVersionedFeatureGate) map[schema.GroupResource]bool {
	byFeature := map[schema.GroupResource]bool{}
	specs := gate.GetAll()
	for f, grs := range featureAPIs {
		if !gate.Enabled(f) {
			continue
		}
		for _, gr := range grs {
			byFeature[gr] = byFeature[gr] || specs[f].PreRelease != featuregate.Alpha
		}
	}
	return byFeature
}

// guardedOff returns the resources guarded by a disabled feature (featureGuardedAPIs).
func guardedOff(gate featuregate.MutableVersionedFeatureGate) sets.Set[schema.GroupResource] {
	off := sets.New[schema.GroupResource]()
	for f, grs := range featureGuardedAPIs {
		if !enabled(gate, f) {
			off.Insert(grs...)
		}
	}
	return off
}

// gvOutcome is, for a group-version --runtime-config enables by name, why none of its
// resources is served.
type gvOutcome struct{ served, unintroduced, removed bool }

// enabler is one run of enablement: its inputs, and what it found so far.
type enabler struct {
	v                                                 Versions
	rc                                                *runtimeConfig
	forwardCompatible, runtimeConfigForwardCompatible bool
	byFeature                                         map[schema.GroupResource]bool
	guarded                                           sets.Set[schema.GroupResource] // guarded by a disabled feature

	served   sets.Set[schema.GroupVersionResource]
	outcomes map[schema.GroupVersion]*gvOutcome
	errs     []error
}

// resource decides the served versions of one resource, lowest priority first.
func (e *enabler) resource(r *catalog.Resource) {
	configured := e.configured(r)
	lowerServed := false // a lower-priority beta or GA version is served
	for i := len(r.Versions) - 1; i >= 0; i-- {
		ver := &r.Versions[i]
		if !configured[i] || !e.serve(r, ver, lowerServed) {
			continue
		}
		gvr := schema.GroupVersionResource{Group: r.Group, Version: ver.Name, Resource: r.Names.Plural}
		e.served.Insert(gvr)
		if outcome := e.outcomes[gvr.GroupVersion()]; outcome != nil {
			outcome.served = true
		}
		if stabilityOf(ver.Name) != alpha {
			lowerServed = true
		}
	}
}

// configured returns, per version of r, whether defaults, features and --runtime-config
// switch it on (rules 1 and 2).
func (e *enabler) configured(r *catalog.Resource) []bool {
	_, featured := e.byFeature[r.GroupResource()]
	guarded := e.guarded.Has(r.GroupResource())
	configured := make([]bool, len(r.Versions))
	for i := range r.Versions {
		ver := &r.Versions[i]
		gvr := schema.GroupVersionResource{Group: r.Group, Version: ver.Name, Resource: r.Names.Plural}
		configured[i] = e.rc.configured(gvr, !guarded && (featured || servedByDefault(ver)))
	}
	if !e.forwardCompatible {
		return configured
	}
	// Versions are newest first: switch on everything newer than the oldest
	// switched-on beta or GA version that exists at the emulation version,
	// unless switched off by name.
	for i := len(r.Versions) - 1; i >= 0; i-- {
		if !configured[i] || stabilityOf(r.Versions[i].Name) == alpha || !r.Versions[i].AvailableAt(e.v.Emulation) {
			continue
		}
		for j := range i {
			gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Versions[j].Name, Resource: r.Names.Plural}
			if _, set := e.rc.explicit(gvr); !set {
				configured[j] = true
			}
		}
		break
	}
	return configured
}

// serve applies rule 3 to a switched-on version, recording why it is not served.
func (e *enabler) serve(r *catalog.Resource, ver *catalog.Version, lowerServed bool) bool {
	gvr := schema.GroupVersionResource{Group: r.Group, Version: ver.Name, Resource: r.Names.Plural}
	outcome := e.outcomes[gvr.GroupVersion()]
	explicitOn, _ := e.rc.explicit(gvr)
	_, resourceNamed := e.rc.resources[gvr]
	switch {
	case ver.Removed != nil && !ver.Removed.GreaterThan(e.v.Emulation):
		if outcome != nil {
			outcome.removed = true
		}
		if resourceNamed && explicitOn {
			e.errs = append(e.errs, fmt.Errorf("cannot enable resource %s in runtime-config because it was removed at %s, not after the current version %s", gvr, ver.Removed, e.v.Emulation))
		}
		return false
	case !ver.Introduced.GreaterThan(e.v.Emulation),
		e.forwardCompatible && lowerServed,
		e.runtimeConfigForwardCompatible && explicitOn:
		return true
	}
	if outcome != nil {
		outcome.unintroduced = true
	}
	if resourceNamed && explicitOn {
		e.errs = append(e.errs, fmt.Errorf("cannot enable resource %s in runtime-config because it is introduced at %s after the current version %s. Consider setting --runtime-config-emulation-forward-compatible=true",
			gvr, ver.Introduced, e.v.Emulation))
	}
	return false
}

// versionErrors reports group-versions enabled by name of which nothing is served.
func (e *enabler) versionErrors() {
	for _, gv := range sortedGroupVersions(e.outcomes) {
		switch o := e.outcomes[gv]; {
		case o.served:
		case o.unintroduced:
			e.errs = append(e.errs, fmt.Errorf("cannot enable version %s in runtime-config because all the resources have been introduced after the current version %s. Consider setting --runtime-config-emulation-forward-compatible=true", gv, e.v.Emulation))
		case o.removed:
			e.errs = append(e.errs, fmt.Errorf("cannot enable version %s in runtime-config because all its resources were removed at or before the current version %s", gv, e.v.Emulation))
		}
	}
}

// alphaErrors applies the first half of rule 4.
func (e *enabler) alphaErrors() {
	if !e.v.Emulation.LessThan(e.v.Binary) {
		return
	}
	alphaGVs := sets.New[string]()
	for gvr := range e.served {
		if stabilityOf(gvr.Version) == alpha && !e.byFeature[gvr.GroupResource()] {
			alphaGVs.Insert(gvr.GroupVersion().String())
		}
	}
	if alphaGVs.Len() > 0 {
		e.errs = append(e.errs, fmt.Errorf("alpha APIs %v cannot be enabled with emulation version %s, lower than the binary version %s: disable them in --runtime-config or emulate %s",
			sets.List(alphaGVs), e.v.Emulation, e.v.Binary, e.v.Binary))
	}
}

// featureErrors applies the second half of rule 4.
func (e *enabler) featureErrors(gate featuregate.MutableVersionedFeatureGate) {
	servedResources := sets.New[schema.GroupResource]()
	for gvr := range e.served {
		servedResources.Insert(gvr.GroupResource())
	}
	for _, f := range slices.Sorted(maps.Keys(featureAPIs)) {
		if !gate.Enabled(f) {
			continue
		}
		var missing []string
		for _, gr := range featureAPIs[f] {
			if !servedResources.Has(gr) {
				missing = append(missing, gr.String())
			}
		}
		if len(missing) > 0 {
			e.errs = append(e.errs, fmt.Errorf("feature gate %s is enabled, but requires API resources that are not served: %s; add --feature-gates=%s=false to turn it off with them, or serve them with --runtime-config",
				f, strings.Join(missing, ", "), f))
		}
	}
}

// servedByDefault reports whether a version that exists is served without any
// --runtime-config: GA versions, and beta versions from before betaOffByDefaultSince.
func servedByDefault(ver *catalog.Version) bool {
	switch stabilityOf(ver.Name) {
	case ga:
		return true
	case beta:
		return ver.Introduced.LessThan(betaOffByDefaultSince)
	}
	return false
}

func sortedGroupVersions[V any](m map[schema.GroupVersion]V) []schema.GroupVersion {
	out := make([]schema.GroupVersion, 0, len(m))
	for gv := range m {
		out = append(out, gv)
	}
	slices.SortFunc(out, func(a, b schema.GroupVersion) int { return strings.Compare(a.String(), b.String()) })
	return out
}
