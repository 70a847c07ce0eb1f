package controlplane

import (
	"fmt"

	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/wire"
)

// gitVersion names the build in /version: the binary's release, marked as Concord's.
func gitVersion(compat *compatibility.Config) string {
	b := compat.Versions.Binary
	return fmt.Sprintf("v%d.%d.0%s", b.Major(), b.Minor(), wire.GitVersionSuffix)
}
