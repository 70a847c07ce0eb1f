package controlplane

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/concordproject/concord/memory"
	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// NewCommand returns `concord server`.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a Concord API server",
		Long: `Run a Concord API server: a Kubernetes-compatible API server that persists
multi-version resources in etcd (embedded under --data-dir unless --etcd-servers is
given). Several servers may share one etcd; each writes an admin kubeconfig pointing
at itself whose credentials work on all of them.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: false,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			o.Logs.Apply()
			ceiling, err := o.Memory.Ceiling()
			if err != nil {
				return err
			}
			defer memory.Apply(ceiling)()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ctx = klog.NewContext(ctx, klog.Background())
			inst, err := Start(ctx, o)
			if err != nil && ctx.Err() != nil && cmd.Context().Err() == nil {
				// SIGINT or SIGTERM during the start: Start has stopped what it had
				// started. A stop asked for is not a failure, before ready as after.
				klog.FromContext(ctx).Info("Stopped before ready", "signal", context.Cause(ctx), "start", err.Error())
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Concord is serving on %s\nkubeconfig: %s\n", inst.URL, inst.KubeconfigPath)
			return inst.Wait()
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}
