package upgradecheck

import (
	"fmt"
	"strings"

	"github.com/concordproject/concord/versionskew"
	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/util/version"
)

// Fleet is what the cluster's API servers say of their releases.
type Fleet struct {
	// Binary is the newest binary version among them (major.minor; "" when unknown):
	// a target below it is a rollback.
	Binary string
	// MinCompatibility is the highest minimum compatibility version they run with
	// ("" when unknown): the oldest release that can read what they may have written.
	MinCompatibility string
	// Kube is true for a fleet of kube-apiservers (the server answering /version is
	// not Concord's, and there is no VersionSkew report).
	Kube bool
}

// FleetOf reads the fleet from the servers' VersionSkew report (its Concord API
// servers: kind kube-apiserver, role apiserver) or, without one, from the binary
// version the server answering /version reports (gitVersion; minimum compatibility
// then unknown).
func FleetOf(report *versionskew.VersionSkew, serverVersion string) (Fleet, error) {
	var f Fleet
	if report == nil {
		if v, err := version.ParseGeneric(serverVersion); err == nil {
			f.Binary = version.MajorMinor(v.Major(), v.Minor()).String()
			f.Kube = !strings.HasSuffix(serverVersion, wire.GitVersionSuffix)
		}
		return f, nil
	}
	for _, c := range report.Status.Components {
		if c.Role != versionskew.APIServer || c.Kind != wire.KindKubeAPIServer {
			continue
		}
		comp, err := componentOf(c)
		if err != nil {
			return Fleet{}, fmt.Errorf("the VersionSkew report: %w", err)
		}
		f.Binary = highest(f.Binary, comp.Binary)
		f.MinCompatibility = highest(f.MinCompatibility, comp.MinCompatibility)
	}
	return f, nil
}

func highest(a string, b *version.Version) string {
	if b == nil {
		return a
	}
	if s := b.String(); a == "" || newer(s, a) {
		return s
	}
	return a
}

// belowFleet returns why target cannot run beside (or after) the fleet whatever is
// persisted: the fleet's servers stay readable by f.MinCompatibility, so they may have
// written data only that release and later read; nil when target is at or above it.
func (f Fleet) belowFleet(target Release) []string {
	if f.MinCompatibility == "" || !newer(f.MinCompatibility, target.Binary) {
		return nil
	}
	return []string{
		fmt.Sprintf("The servers run with --min-compatibility-version=%s: they may have written data (fields, enum values, versions) that only release %s and later read, and a server of %s refuses to join them.",
			f.MinCompatibility, f.MinCompatibility, target.Binary),
		fmt.Sprintf("Lower it first: restart every server with --min-compatibility-version=%s, let the storage-migration trigger migrate what they stored since, and check again (the fields objects still use are then named below).", target.Binary),
	}
}

// move names the move to target from the fleet: an upgrade, a rollback, or staying
// on the release running.
func (f Fleet) move(target Release) string {
	to := target.Binary
	switch {
	case f.Binary == "":
		return "the move to " + to
	case newer(to, f.Binary):
		return fmt.Sprintf("upgrade from %s to %s", f.Binary, to)
	case newer(f.Binary, to):
		return fmt.Sprintf("rollback from %s to %s", f.Binary, to)
	}
	return fmt.Sprintf("release %s (the release running)", to)
}

// capitalized returns s with its first letter upper case.
func capitalized(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
