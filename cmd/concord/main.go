package main

import (
	"os"

	"github.com/concordproject/concord/auth"
	"github.com/concordproject/concord/controlplane"
	"github.com/concordproject/concord/etcd"
	"github.com/concordproject/concord/migration"
	"github.com/concordproject/concord/upgradecheck"
	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{Use: "concord", Short: "Concord: safe storage-version changes for Kubernetes-style API servers", SilenceUsage: true}
	root.AddCommand(controlplane.NewCommand(), etcd.NewCommand(), auth.NewKubeconfigCommand(), migration.NewCommand(), migration.NewMigrationsCommand(), upgradecheck.NewCommand())
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
