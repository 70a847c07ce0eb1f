package wire

import (
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

// LabelControllerIdentity marks the identity lease of a controller manager (a client
// of the API servers that runs controllers, not a server); its value names its kind,
// "controller-manager" for `concord controller-manager`.
const LabelControllerIdentity = "concord.io/controller-identity"

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
	emulation, found := labels[LabelEmulationVersion]
	if !found {
		return ComponentVersions{}, false, nil
	}
	parse := func(key, value string) *version.Version {
		if err != nil {
			return nil
		}
		p, perr := version.ParseGeneric(value)
		if perr != nil {
			err = fmt.Errorf("label %s=%q: %w", key, value, perr)
			return nil
		}
		return version.MajorMinor(p.Major(), p.Minor())
	}
	v.Emulation = parse(LabelEmulationVersion, emulation)
	v.Binary, v.MinCompatibility = v.Emulation, v.Emulation
	if s, found := labels[LabelBinaryVersion]; found {
		v.Binary = parse(LabelBinaryVersion, s)
	}
	if s, found := labels[LabelMinCompatibilityVersion]; found {
		v.MinCompatibility = parse(LabelMinCompatibilityVersion, s)
	}
	if err != nil {
		return ComponentVersions{}, false, err
	}
	return v, true, nil
}
