package migration

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/concordproject/concord/auth"
	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/migration/controller"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// NewMigrationsCommand returns `concord migrations`: a table of the
// StorageVersionMigrations of the server of --kubeconfig, with a progress bar for
// those running, optionally kept up to date (--watch).
func NewMigrationsCommand() *cobra.Command {
	var kubeconfig string
	var watch bool
	cmd := &cobra.Command{
		Use:   "migrations [RESOURCE]",
		Short: "Show storage version migrations and their progress",
		Long: `Show the migrationapi.StorageVersionMigrations of the cluster (those of RESOURCE only, given as
<resource>.<group> or <resource> for the core group): what each rewrites, its phase, a
progress bar while it runs, the objects migrated (written again in the storage
version), skipped (already current, or changed or deleted meanwhile), failed (with
names and reasons below the table) out of the total counted at its start, and its age.`,
		Args:         cobra.MaximumNArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			rc, err := auth.LoadKubeconfig(kubeconfig)
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(rc)
			if err != nil {
				return err
			}
			filter := ""
			if len(args) == 1 {
				filter = args[0]
			}
			out := cmd.OutOrStdout()
			if !watch {
				list, err := dyn.Resource(migrationapi.StorageVersionMigrations).List(cmd.Context(), metav1.ListOptions{})
				if err != nil {
					return err
				}
				var objs []*unstructured.Unstructured
				for i := range list.Items {
					objs = append(objs, &list.Items[i])
				}
				return PrintMigrations(out, decodeMigrations(objs), filter, time.Now())
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return watchMigrations(ctx, dyn, out, filter)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig of the API server (default: $KUBECONFIG, ~/.kube/config, or in-cluster).")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "Keep the table up to date until interrupted.")
	return cmd
}

// watchMigrations prints the table again, at most twice a second, whenever a
// migration changes; on a terminal the screen is cleared first.
func watchMigrations(ctx context.Context, dyn dynamic.Interface, out io.Writer, filter string) error {
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	inf := factory.ForResource(migrationapi.StorageVersionMigrations).Informer()
	changed := make(chan struct{}, 1)
	notify := func(interface{}) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: notify, UpdateFunc: func(_, o interface{}) { notify(o) }, DeleteFunc: notify}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil
	}
	tty := isTerminal(out)
	// A timer, not a retry: the table is drawn again every second.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		var objs []*unstructured.Unstructured
		for _, o := range inf.GetStore().List() {
			objs = append(objs, o.(*unstructured.Unstructured))
		}
		if tty {
			fmt.Fprint(out, "\033[H\033[2J")
		} else {
			fmt.Fprintln(out)
		}
		if err := PrintMigrations(out, decodeMigrations(objs), filter, time.Now()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-tick.C: // ages and progress move on
		}
		select {
		case <-ctx.Done():
			return nil
		// A timer of the display: drawn at most twice a second, however often the
		// migrations change.
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// decodeMigrations decodes the migrations, each with its progress where the
// controller wrote it: status.progress, or its annotation where the API keeps no
// status.progress (Kubernetes' built-in API).
func decodeMigrations(objs []*unstructured.Unstructured) []*migrationapi.StorageVersionMigration {
	var out []*migrationapi.StorageVersionMigration
	for _, u := range objs {
		if m, err := migrationapi.MigrationFrom(u); err == nil {
			m.Status.Progress = controller.ProgressOf(u)
			out = append(out, m)
		}
	}
	return out
}

// progressBarWidth is the number of cells of a progress bar.
const progressBarWidth = 20

// PrintMigrations writes the table of migrations (those of resource filter only,
// when not empty) as `concord migrations` shows it at time now: RESOURCE, PHASE,
// PROGRESS (a bar while running), MIGRATED, SKIPPED, FAILED, TOTAL, AGE, NAME, then
// the first failures of each migration that has some.
func PrintMigrations(w io.Writer, migs []*migrationapi.StorageVersionMigration, filter string, now time.Time) error {
	slices.SortFunc(migs, func(a, b *migrationapi.StorageVersionMigration) int {
		if c := strings.Compare(resourceOf(a), resourceOf(b)); c != 0 {
			return c
		}
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESOURCE\tPHASE\tPROGRESS\tMIGRATED\tSKIPPED\tFAILED\tTOTAL\tAGE\tNAME")
	var failures []string
	shown := 0
	for _, m := range migs {
		res := resourceOf(m)
		if filter != "" && res != filter {
			continue
		}
		shown++
		p := m.Status.Progress
		if p == nil {
			p = &migrationapi.Progress{}
		}
		phase := m.Phase()
		if c := migrationapi.FindCondition(m.Status.Conditions, migrationapi.ConditionFailed); phase == migrationapi.ConditionFailed && c != nil && c.Reason != "" {
			phase += " (" + c.Reason + ")"
		}
		bar, total := "-", "?"
		if p.Total != nil {
			total = fmt.Sprint(*p.Total)
		}
		if m.Phase() == migrationapi.ConditionRunning {
			bar = progressBar(p)
		}
		age := "<unknown>"
		if !m.CreationTimestamp.IsZero() {
			age = duration.HumanDuration(now.Sub(m.CreationTimestamp.Time))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", res, phase, bar, p.Migrated, p.Skipped, p.Failed, total, age, m.Name)
		for i, f := range p.Failures {
			if i == 3 {
				failures = append(failures, fmt.Sprintf("%s: ... %d more", m.Name, p.Failed-3))
				break
			}
			failures = append(failures, fmt.Sprintf("%s: %s: %s", m.Name, cache.NewObjectName(f.Namespace, f.Name), f.Reason))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if shown == 0 {
		_, err := fmt.Fprintln(w, "No storage version migrations.")
		return err
	}
	if len(failures) > 0 {
		fmt.Fprintln(w, "\nObjects not migrated:")
		for _, f := range failures {
			fmt.Fprintln(w, "  "+f)
		}
	}
	return nil
}

// resourceOf names a migration's resource as StorageStates are named.
func resourceOf(m *migrationapi.StorageVersionMigration) string {
	if m.Spec.Resource.Group == "" {
		return m.Spec.Resource.Resource
	}
	return m.Spec.Resource.Resource + "." + m.Spec.Resource.Group
}

// progressBar draws the share of the objects dealt with, "[#####...............]  25%";
// without a total it shows the count alone.
func progressBar(p *migrationapi.Progress) string {
	done := p.Migrated + p.Skipped + p.Failed
	if p.Total == nil || *p.Total <= 0 {
		return fmt.Sprintf("[%s] %d done", strings.Repeat("?", progressBarWidth), done)
	}
	frac := min(1, float64(done)/float64(*p.Total))
	n := int(frac * progressBarWidth)
	return fmt.Sprintf("[%s%s] %3d%%", strings.Repeat("#", n), strings.Repeat(".", progressBarWidth-n), int(frac*100))
}
