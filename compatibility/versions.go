package compatibility

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
	basecompatibility "k8s.io/component-base/compatibility"

	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/wire"
)

// Component is the component name of the version flags ("--emulation-version=kube=1.36")
// and of the version_info metric. Concord's versions are Kubernetes releases, so the name
// is kube-apiserver's.
const Component = "kube"

// SupportedSkew is how many releases below its binary version a server can emulate and
// stay compatible with (KEP-4330's N-3).
const SupportedSkew = 3

// Versions are the three versions of KEP-4330 a server runs with, each major.minor.
type Versions struct {
	// Binary is the release the server was built as.
	Binary *version.Version
	// Emulation is the release whose APIs and behaviour the server presents.
	Emulation *version.Version
	// MinCompatibility is the oldest release the server's data must stay readable by
	// (rollback target).
	MinCompatibility *version.Version
}

// Default returns the versions of a server started without flags: emulation = binary,
// minimum compatibility = binary-1. It does not know the catalog, so it does not clamp
// the minimum compatibility version to the oldest release a catalog describes; Options
// does (see Floor).
func Default(binary *version.Version) Versions {
	b := version.MajorMinor(binary.Major(), binary.Minor())
	return Versions{Binary: b, Emulation: b, MinCompatibility: subtractMinor(b, 1)}
}

// Floor returns the oldest release a server built from cat may emulate or stay
// compatible with: SupportedSkew releases below the binary version, or the catalog's
// oldest release if that is later (a build cannot emulate a release it has no history
// of).
func Floor(cat *catalog.Catalog) *version.Version {
	return floor(cat.Releases()[0], cat.BinaryVersion())
}

// floor is Floor of a catalog whose oldest and newest releases are given.
func floor(oldest, binary *version.Version) *version.Version {
	if f := subtractMinor(binary, SupportedSkew); !oldest.GreaterThan(f) {
		return f
	}
	return oldest
}

// Window returns the releases [MinCompatibility, Emulation+1], oldest first: the
// releases that must be able to read what the server writes (a rollback down to
// MinCompatibility, or the next release up).
func (v Versions) Window() []*version.Version {
	var out []*version.Version
	next := v.Emulation.AddMinor(1)
	for rel := v.MinCompatibility; !rel.GreaterThan(next); rel = rel.AddMinor(1) {
		out = append(out, rel)
	}
	return out
}

// String returns the versions as "binary 1.37, emulation 1.36, min compatibility 1.35".
func (v Versions) String() string {
	return fmt.Sprintf("binary %s, emulation %s, min compatibility %s", v.Binary, v.Emulation, v.MinCompatibility)
}

// resolveVersions computes the versions a server built from cat runs with, from the raw
// values of --emulation-version and --min-compatibility-version. ok is false when the
// versions are unusable (the errors say why), in which case nothing that depends on
// them can be resolved.
func resolveVersions(cat *catalog.Catalog, emulation, minCompat []string) (v Versions, ok bool, errs []error) {
	floor := Floor(cat)
	v.Binary = cat.BinaryVersion()

	emu, emuErrs := parseVersionFlag(emulation)
	minc, mincErrs := parseVersionFlag(minCompat)
	errs = append(emuErrs, mincErrs...)

	v.Emulation = v.Binary
	if emu != nil {
		v.Emulation = emu
	}
	emulationOK := len(emuErrs) == 0 && inRange(v.Emulation, floor, v.Binary)
	if len(emuErrs) == 0 && !emulationOK {
		errs = append(errs, fmt.Errorf("emulation version %s is not between [%s, %s]", v.Emulation, floor, v.Binary))
	}

	// The minimum compatibility version defaults to emulation-1, but never below the
	// floor: at emulation == floor it is the emulation version itself.
	v.MinCompatibility = subtractMinor(v.Emulation, 1)
	if v.MinCompatibility.LessThan(floor) {
		v.MinCompatibility = v.Emulation
	}
	if minc != nil {
		v.MinCompatibility = minc
		// With an unusable emulation version, check what surely stays wrong: the
		// minimum compatibility version against the widest range it could have.
		upper := v.Emulation
		if !emulationOK {
			upper = v.Binary
		}
		if len(mincErrs) == 0 && !inRange(minc, floor, upper) {
			errs = append(errs, fmt.Errorf("minCompatibilityVersion version %s is not between [%s, %s]", minc, floor, upper))
		}
	}
	return v, len(errs) == 0, errs
}

// parseVersionFlag parses the values of a version flag: "1.36", "v1.36", "1.36.0" or
// "kube=1.36", possibly comma-separated. It returns the kube version (nil if none is
// given) and every problem, in kube-apiserver's words.
func parseVersionFlag(values []string) (*version.Version, []error) {
	var (
		out  *version.Version
		errs []error
	)
	for _, value := range values {
		for item := range strings.SplitSeq(value, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			component, raw := Component, item
			if k, val, found := strings.Cut(item, "="); found {
				component, raw = strings.TrimSpace(k), strings.TrimSpace(val)
			}
			ver, err := version.Parse(raw)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if ver.Patch() != 0 {
				errs = append(errs, fmt.Errorf("patch version not allowed, got: %s=%s", component, ver))
				continue
			}
			if component != Component {
				errs = append(errs, fmt.Errorf("component not registered: %s", component))
				continue
			}
			mm := version.MajorMinor(ver.Major(), ver.Minor())
			if out != nil {
				errs = append(errs, fmt.Errorf("duplicate version flag, %s=%s and %s=%s", component, out, component, mm))
				continue
			}
			out = mm
		}
	}
	return out, errs
}

// parseRelease parses a major.minor release such as "1.36" or "v1.36"; a patch version
// is ignored.
func parseRelease(s string) (*version.Version, error) {
	v, err := version.Parse(strings.TrimSpace(s))
	if err != nil {
		return nil, err
	}
	return version.MajorMinor(v.Major(), v.Minor()), nil
}

// inRange reports whether lo <= v <= hi.
func inRange(v, lo, hi *version.Version) bool {
	return !v.LessThan(lo) && !v.GreaterThan(hi)
}

// subtractMinor returns v minus n minor releases, stopping at minor 0.
func subtractMinor(v *version.Version, n uint) *version.Version {
	if v.Minor() < n {
		return version.MajorMinor(v.Major(), 0)
	}
	return version.MajorMinor(v.Major(), v.Minor()-n)
}

// Effective returns v as component-base's EffectiveVersion, the form in which
// libraries of k8s.io/apiserver and kube's admission plugins read a server's
// versions.
func (v Versions) Effective() basecompatibility.EffectiveVersion {
	e := basecompatibility.NewEffectiveVersion(v.Binary, false, version.MajorMinor(0, 0), version.MajorMinor(0, 0))
	e.SetEmulationVersion(v.Emulation)
	e.SetMinCompatibilityVersion(v.MinCompatibility)
	return e
}

// Component returns the versions as a component announces them on its identity
// lease (wire.LabelEmulationVersion and the others).
func (v Versions) Component() wire.ComponentVersions {
	return wire.ComponentVersions{Binary: v.Binary, Emulation: v.Emulation, MinCompatibility: v.MinCompatibility}
}
