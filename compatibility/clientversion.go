package compatibility

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/concordproject/concord/catalog"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// BuildRelease returns the release this build of Concord is (major.minor): the newest
// release of its built-in API catalog, which every build carries, linker flags or not.
// It is the binary version of a server started without --binary-version, and the
// version Concord's command-line clients announce (IdentifyClient).
func BuildRelease() (*version.Version, error) {
	s, err := catalog.DefaultSummary()
	if err != nil {
		return nil, fmt.Errorf("the built-in API catalog: %w", err)
	}
	return s.BinaryVersion(), nil
}

// IdentifyClient makes the clients built from rc Concord's clients of release v: every
// request carries ClientVersionHeader with v's major.minor (after any wrapper rc already
// has), and, if rc sets no User-Agent, client-go's default one with v in place of
// client-go's own build version ("concord/v1.37.0 (linux/amd64) kubernetes/1a2b3c4"),
// which a build without linker flags leaves at v0.0.0. Servers then count the clients
// as Concord's of release v (ClientSkewHandler), not as client-go programs of release
// 0.0.
func IdentifyClient(rc *rest.Config, v *version.Version) {
	rc.WrapTransport = transport.Wrappers(rc.WrapTransport, WrapTransport(v))
	if rc.UserAgent == "" {
		rc.UserAgent = UserAgent(v)
	}
}

// UserAgent returns the User-Agent of a Concord client of release v, in client-go's
// form: "<program>/v<major>.<minor>.0 (<os>/<arch>) kubernetes/<commit>", the commit
// being the build's VCS revision (its first seven characters) or "unknown".
func UserAgent(v *version.Version) string {
	program := "concord"
	if len(os.Args) > 0 && os.Args[0] != "" {
		program = strings.TrimSuffix(filepath.Base(os.Args[0]), ".exe")
	}
	return fmt.Sprintf("%s/v%d.%d.0 (%s/%s) kubernetes/%s", program, v.Major(), v.Minor(), runtime.GOOS, runtime.GOARCH, buildCommit())
}

// buildCommit is the VCS revision the build records, shortened as client-go shortens
// its commit, or "unknown".
func buildCommit() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				return s.Value[:min(7, len(s.Value))]
			}
		}
	}
	return "unknown"
}
