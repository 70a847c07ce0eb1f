package wire

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
)

// The labels with which every component of a Concord control plane announces its
// KEP-4330 versions on its identity lease (a coordination.k8s.io/v1 Lease in
// kube-system): Concord's servers, the aggregated servers that publish through
// package storageversion/publisher, and `concord controller-manager`. Values are
// major.minor ("1.36"). The version skew controller compares them.
const (
	LabelBinaryVersion           = "concord.io/binary-version"
	LabelEmulationVersion        = "concord.io/emulation-version"
	LabelMinCompatibilityVersion = "concord.io/min-compatibility-version"
)

// LabelAPIServerIdentity marks the identity lease of an API server (Kubernetes' key);
// its value names the kind of server: "kube-apiserver" for Concord's servers, a kind
// of an aggregated server's own choosing for the others.
const LabelAPIServerIdentity = "apiserver.kubernetes.io/identity"

// KindKubeAPIServer is LabelAPIServerIdentity's value on Concord servers' leases: to
// clients they are kube-apiservers.
const KindKubeAPIServer = "kube-apiserver"

// ErrNoVersion is returned for a component whose versions lack the emulation version.
var ErrNoVersion = errors.New("component versions incomplete")

// LabelControllerIdentity marks the identity lease of a controller manager (a client
// of the API servers that runs controllers, not a server); its value names its kind,
// "controller-manager" for `concord controller-manager`.
const LabelControllerIdentity = "concord.io/controller-identity"

// GitVersionSuffix ends the gitVersion a Concord server's /version reports
// ("v1.37.0-concord"), which tells its clients it is not a kube-apiserver.
const GitVersionSuffix = "-concord"

// ComponentVersions are a component's KEP-4330 versions.
type ComponentVersions struct {
	Binary, Emulation, MinCompatibility *version.Version
}

// Labels returns the version labels of v (major.minor each), for an identity lease.
func (v ComponentVersions) Labels() map[string]string {
	out := map[string]string{}
	for key, ver := range map[string]*version.Version{
		LabelBinaryVersion: v.Binary, LabelEmulationVersion: v.Emulation, LabelMinCompatibilityVersion: v.MinCompatibility,
	} {
		if ver != nil {
			out[key] = version.MajorMinor(ver.Major(), ver.Minor()).String()
		}
	}
	return out
}

// ComponentVersionsOf reads the version labels of an identity lease. ok is false when
// the lease carries none (a component that does not announce its versions); an error
// names a label whose value is not a version. A missing binary version is the
// emulation version; a missing minimum compatibility version, the emulation version.
func ComponentVersionsOf(labels map[string]string) (v ComponentVersions, ok bool, err error) {
	if _, found := labels[LabelEmulationVersion]; !found {
		return ComponentVersions{}, false, nil
	}
	v, err = ParseComponentVersions(labels[LabelBinaryVersion], labels[LabelEmulationVersion], labels[LabelMinCompatibilityVersion])
	if err != nil {
		return ComponentVersions{}, false, fmt.Errorf("version labels: %w", err)
	}
	return v, true, nil
}

// ParseComponentVersions reads a component's versions as its lease's labels or a
// VersionSkew report write them (major.minor; a longer version is cut to it). An
// empty binary or minimum compatibility version is the emulation version; an error
// names the version that does not parse.
func ParseComponentVersions(binary, emulation, minCompatibility string) (ComponentVersions, error) {
	var err error
	parse := func(key, value string) *version.Version {
		if err != nil || value == "" {
			return nil
		}
		p, perr := version.ParseGeneric(value)
		if perr != nil {
			err = fmt.Errorf("%s %q: %w", key, value, perr)
			return nil
		}
		return version.MajorMinor(p.Major(), p.Minor())
	}
	v := ComponentVersions{
		Emulation:        parse("emulation version", emulation),
		Binary:           parse("binary version", binary),
		MinCompatibility: parse("minimum compatibility version", minCompatibility),
	}
	if err == nil && v.Emulation == nil {
		err = fmt.Errorf("%w: no emulation version", ErrNoVersion)
	}
	if err != nil {
		return ComponentVersions{}, err
	}
	if v.Binary == nil {
		v.Binary = v.Emulation
	}
	if v.MinCompatibility == nil {
		v.MinCompatibility = v.Emulation
	}
	return v, nil
}
