package upgradecheck

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	migrationapi "github.com/concordproject/concord/migration/api"
)

// Print writes the report as `concord upgrade-check` shows it: a line naming the
// target, the table (RESOURCE, PERSISTED, RELEASE X DECODES, VERDICT, UNBLOCK), the
// warnings (resources the target does not serve), what each blocked resource needs
// (with a StorageVersionMigration manifest where a migration unblocks it), and a
// summary line.
func (r *Report) Print(w io.Writer) error {
	t := r.Target
	fmt.Fprintf(w, "%s, emulating %s. What the cluster has persisted, and what the target decodes:\n\n", capitalized(r.Fleet.move(t)), t.Emulation)
	if r.JudgedAs != "" {
		fmt.Fprintf(w, "Release %s is newer than this build knows: its API catalog ends at %s, so the target is judged as %s would be, and what %s adds or removes is unverified (use a build of %s, or its catalog with --api-catalog).\n\n",
			t.Binary, r.JudgedAs, r.JudgedAs, t.Binary, t.Binary)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "RESOURCE\tPERSISTED\tRELEASE %s DECODES\tVERDICT\tUNBLOCK\n", t.Binary)
	for _, v := range r.Verdicts {
		name, decodes, verdict := v.Name(), strings.Join(v.Decodes, ","), "ok"
		if v.CRD {
			name += " (CRD)"
		}
		if !v.Served {
			decodes = "- (not served)"
		}
		switch {
		case v.Blocked:
			verdict = "BLOCKED"
		case v.Unverified:
			verdict, decodes = "unverified", "?"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, orDash(strings.Join(v.Persisted, ",")), orDash(decodes), verdict, v.Unblock)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	r.printUnverified(w)
	warnings := 0
	for _, v := range r.Verdicts {
		if v.Served || v.Unverified {
			continue
		}
		if warnings == 0 {
			fmt.Fprintln(w, "\nWarnings (not blocking):")
		}
		warnings++
		fmt.Fprintf(w, "  %s: release %s would not serve it; its objects stay in etcd untouched, unreachable until a release that serves it runs again.\n", v.Name(), t.Binary)
	}
	if len(r.FleetBlocked) > 0 {
		fmt.Fprintf(w, "\nBlocked: release %s is below the servers' minimum compatibility version, %s.\n", t.Binary, r.Fleet.MinCompatibility)
		for _, s := range r.FleetBlocked {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
	blocked := r.Blocked()
	for i, v := range blocked {
		if i == 0 {
			fmt.Fprintln(w, "\nBlocked:")
		}
		printBlocked(w, &v)
	}
	_, err := fmt.Fprintln(w, "\n"+r.summary(len(blocked), warnings))
	return err
}

func (r *Report) summary(blocked, warnings int) string {
	n, move := len(r.Verdicts), capitalized(r.Fleet.move(r.Target))
	switch {
	case len(r.FleetBlocked) > 0:
		return fmt.Sprintf("%s is NOT safe: the servers' minimum compatibility version is %s; %d of %d resources block (%s).", move, r.Fleet.MinCompatibility, blocked, n, plural(warnings, "warning"))
	case blocked > 0:
		return fmt.Sprintf("%s is NOT safe: %d of %d resources block (%s).", move, blocked, n, plural(warnings, "warning"))
	}
	if r.JudgedAs != "" {
		return fmt.Sprintf("%s is safe as far as this build knows: release %s, judged as %s, decodes everything persisted of %s and knows every field its objects use (%s; what %s changes unverified).",
			move, r.Target.Binary, r.JudgedAs, plural(n, "resource"), plural(warnings, "warning"), r.Target.Binary)
	}
	return fmt.Sprintf("%s is safe: release %s decodes everything persisted of %s and knows every field its objects use (%s).", move, r.Target.Binary, plural(n, "resource"), plural(warnings, "warning"))
}

// printUnverified names the resources this build's API catalog does not know.
func (r *Report) printUnverified(w io.Writer) {
	var names []string
	for _, v := range r.Verdicts {
		if v.Unverified {
			names = append(names, v.Name())
		}
	}
	if len(names) == 0 {
		return
	}
	fmt.Fprintf(w, "\nUnverified (not blocking): this build's API catalog does not know %s, so what release %s decodes of them is not checked: %s.\n",
		plural(len(names), "resource"), r.Target.Binary, strings.Join(names, ", "))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// printBlocked writes why v blocks and what unblocks it.
func printBlocked(w io.Writer, v *Verdict) {
	fmt.Fprintf(w, "  %s:\n", v.Name())
	for _, s := range v.Reasons {
		fmt.Fprintf(w, "    - %s\n", s)
	}
	for _, s := range v.Advice {
		fmt.Fprintf(w, "    %s\n", s)
	}
	if !v.Migrate {
		return
	}
	if v.CRD {
		fmt.Fprintln(w, "    To start it:")
	} else {
		fmt.Fprintln(w, "    To start one by hand (the trigger adopts it while the storage version stays: when it succeeds, the StorageState this check reads is settled):")
	}
	fmt.Fprint(w, Manifest(v))
}

// Manifest returns the command that creates a StorageVersionMigration of v's resource.
func Manifest(v *Verdict) string {
	gvk := migrationapi.StorageVersionMigrations.GroupVersion().WithKind("StorageVersionMigration")
	return fmt.Sprintf(`kubectl create -f - <<EOF
apiVersion: %s
kind: %s
metadata:
  generateName: %s-
spec:
  resource:
    group: %q
    resource: %s
EOF
`, gvk.GroupVersion(), gvk.Kind, v.Name(), v.Resource.Group, v.Resource.Resource)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
