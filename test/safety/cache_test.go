package safety

// The suite runs the concord binary it builds, which go test's cache does not see:
// these imports make the test depend on every package of the binary, so that a change
// to any of them runs the suite again instead of reporting a cached result.
import (
	_ "github.com/concordproject/concord/controlplane"
	_ "github.com/concordproject/concord/etcd"
	_ "github.com/concordproject/concord/migration"
	_ "github.com/concordproject/concord/upgradecheck"
)
