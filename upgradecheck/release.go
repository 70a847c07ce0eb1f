package upgradecheck

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/concordproject/concord/apiextensions"
	"github.com/concordproject/concord/builtin"
	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/klog/v2"
)

// ErrFlag means a flag's value is not allowed; the message says what is.
var ErrFlag = errors.New("invalid flag")

// Releases builds what the checks need to know of releases: the target, a server of
// release to (binary) emulating emulation ("" for to), and the step releases, each
// release above to that can run with --min-compatibility-version=to. cat is the full
// API catalog; to and emulation must be valid (see validateVersions).
func Releases(ctx context.Context, cat *catalog.Catalog, to, emulation string) (target Release, steps []Release, err error) {
	target, err = BuildRelease(ctx, cat, to, emulation, "")
	if err != nil {
		return Release{}, nil, err
	}
	logger := klog.FromContext(ctx)
	x := version.MustParseGeneric(target.Binary)
	for _, rel := range cat.Releases() {
		if !rel.GreaterThan(x) || rel.GreaterThan(x.AddMinor(compatibility.SupportedSkew)) {
			continue
		}
		step, err := BuildRelease(ctx, cat, rel.String(), "", target.Binary)
		if err != nil { // that release cannot keep data readable by to: no step
			logger.V(4).Info("Not a step release", "release", rel, "minCompatibility", target.Binary, "reason", err)
			continue
		}
		steps = append(steps, step)
	}
	return target, steps, nil
}

// BuildRelease returns what a server of binary version binary, with the given
// emulation and minimum compatibility versions ("" for the defaults) and no other
// flags, serves, decodes and stores (reviews, which store nothing, left out): the compatibility package's resources with
// package builtin's own definitions (builtin.Configure), and the CustomResourceDefinition
// resource every server has.
func BuildRelease(ctx context.Context, cat *catalog.Catalog, binary, emulation, minCompatibility string) (Release, error) {
	o := &compatibility.Options{Catalog: cat, BinaryVersion: binary}
	if emulation != "" {
		o.EmulationVersion = []string{emulation}
	}
	if minCompatibility != "" {
		o.MinCompatibilityVersion = []string{minCompatibility}
	}
	cfg, err := o.Complete(ctx)
	if err != nil {
		return Release{}, err
	}
	resources, err := cfg.Resources()
	if err != nil {
		return Release{}, err
	}
	if resources, err = builtin.Configure(resources, builtin.Options{}); err != nil {
		return Release{}, err
	}
	resources = append(resources, apiextensions.Resource())
	v := cfg.Versions
	rel := Release{Binary: v.Binary.String(), Emulation: v.Emulation.String(), MinCompatibility: v.MinCompatibility.String(),
		Resources: map[schema.GroupResource]Served{}}
	for _, r := range resources {
		if r.Persisted() { // reviews store nothing to decode
			rel.Resources[r.GroupResource()] = served(r)
		}
	}
	return rel, nil
}

func served(r *registry.Resource) Served {
	s := Served{Kind: r.Names.Kind, StorageVersion: r.StorageVersion}
	for _, v := range r.Versions {
		s.Versions = append(s.Versions, v.Name)
	}
	registry.SortVersions(s.Versions)
	return s
}

// kubeDecodes are versions kube-apiserver decodes of a resource that Concord's own
// implementation of it does not: CustomResourceDefinitions it stores in v1beta1.
var kubeDecodes = map[schema.GroupResource][]string{apiextensions.GroupResource: {"v1beta1"}}

// AsKubeAPIServer returns rel as a kube-apiserver of the same release has it: it
// decodes the versions of kubeDecodes too.
func (rel Release) AsKubeAPIServer() Release {
	out := rel
	out.Resources = maps.Clone(rel.Resources)
	for gr, versions := range kubeDecodes {
		if s, ok := out.Resources[gr]; ok {
			s.Versions = appendMissing(slices.Clone(s.Versions), versions...)
			out.Resources[gr] = s
		}
	}
	return out
}

// KnownResources returns what the full catalog knows of every built-in resource.
func KnownResources(cat *catalog.Catalog) map[schema.GroupResource]Known {
	out := map[schema.GroupResource]Known{}
	for _, r := range cat.Resources() {
		k := Known{Kind: r.Names.Kind}
		for _, v := range r.Versions {
			k.Versions = append(k.Versions, v.Name)
		}
		out[r.GroupResource()] = k
	}
	return out
}

// beyondCatalog is how many releases past the catalog's newest --to-version may name:
// such a target is judged as the newest release the catalog knows.
const beyondCatalog = compatibility.SupportedSkew

// targetVersions are the target's versions, as major.minor.
type targetVersions struct {
	to, emulation string
	// judgedAs is the catalog's newest release when to is newer than it ("" else):
	// the target is judged as that release would be; judgedEmulation likewise.
	judgedAs, judgedEmulation string
}

// releases builds the target and step releases (Releases); a target beyond the
// catalog is its newest release, named as the target.
func (tv targetVersions) releases(ctx context.Context, cat *catalog.Catalog) (Release, []Release, error) {
	if tv.judgedAs == "" {
		return Releases(ctx, cat, tv.to, tv.emulation)
	}
	target, _, err := Releases(ctx, cat, tv.judgedAs, tv.judgedEmulation)
	target.Binary, target.Emulation = tv.to, tv.emulation
	return target, nil, err
}

// validateVersions checks --to-version and --emulation-version against cat: to must
// be one of the catalog's releases, or at most beyondCatalog releases newer than its
// newest (judged as that one), emulation ("" for to) between to's floor
// (SupportedSkew below, or the catalog's oldest release) and to. Each error is one
// line wrapping ErrFlag that says what is allowed.
func validateVersions(cat *catalog.Catalog, to, emulation string) (targetVersions, error) {
	releases, newest := cat.Releases(), cat.BinaryVersion()
	last := newest.AddMinor(beyondCatalog)
	allowed := fmt.Sprintf("a release from %s to %s (major.minor; the API catalog ends at %s: a newer release is judged as %s, what it changes unverified)", releases[0], last, newest, newest)
	if strings.TrimSpace(to) == "" {
		return targetVersions{}, fmt.Errorf("%w: --to-version is required: %s", ErrFlag, allowed)
	}
	x, err := parseRelease(to)
	if err != nil || !slices.ContainsFunc(releases, x.EqualTo) && (!x.GreaterThan(newest) || x.GreaterThan(last)) {
		return targetVersions{}, fmt.Errorf("%w: --to-version %q: want %s", ErrFlag, to, allowed)
	}
	out := targetVersions{to: x.String(), emulation: x.String()}
	floor := x.SubtractMinor(compatibility.SupportedSkew)
	if truncated, err := cat.Truncate(x); err == nil {
		floor = compatibility.Floor(truncated)
	}
	if emulation != "" {
		e, err := parseRelease(emulation)
		if err != nil || e.LessThan(floor) || e.GreaterThan(x) {
			return targetVersions{}, fmt.Errorf("%w: --emulation-version %q: want a release from %s to %s (release %s emulates at most %d releases below it)",
				ErrFlag, emulation, floor, x, x, compatibility.SupportedSkew)
		}
		out.emulation = e.String()
	}
	if x.GreaterThan(newest) {
		out.judgedAs, out.judgedEmulation = newest.String(), out.emulation
		if e := version.MustParseGeneric(out.emulation); e.GreaterThan(newest) {
			out.judgedEmulation = newest.String()
		}
	}
	return out, nil
}

// parseRelease parses "1.28", "v1.28", "1.28.0" or "kube=1.28" as major.minor; a patch
// version is not allowed.
func parseRelease(s string) (*version.Version, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, compatibility.Component+"="); ok {
		s = rest
	}
	v, err := version.ParseGeneric(s)
	if err != nil {
		return nil, err
	}
	if v.Patch() != 0 {
		return nil, fmt.Errorf("%s: want major.minor", s)
	}
	return version.MajorMinor(v.Major(), v.Minor()), nil
}
