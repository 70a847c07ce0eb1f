package upgradecheck

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/concordproject/concord/versionskew"
	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// targetName names the server of the target release in the skew check.
const targetName = "<a server of the target release>"

// SkewReport says whether the control plane is within the version skew KEP-4330
// allows now (the servers' VersionSkew report) and whether a server of the target
// release, joining it, would be.
type SkewReport struct {
	// Observed is false when the cluster keeps no VersionSkew report (not a Concord
	// control plane, or one of a release without it): nothing is known.
	Observed bool
	// Current is the report's WithinAllowance condition; Components its components.
	Current    *metav1.Condition
	Components []versionskew.ComponentStatus
	// Target are the violations a server of the target release would be party to.
	Target []versionskew.Violation
	// target is what the check was made for.
	target Release
}

// CheckSkew checks target against the components the report lists (nil: none read).
func CheckSkew(report *versionskew.VersionSkew, target Release) (SkewReport, error) {
	s := SkewReport{target: target}
	if report == nil {
		return s, nil
	}
	s.Observed, s.Components = true, report.Status.Components
	s.Current = meta.FindStatusCondition(report.Status.Conditions, versionskew.ConditionWithinAllowance)
	joining, err := componentOf(versionskew.ComponentStatus{Name: targetName, Kind: wire.KindKubeAPIServer, Role: versionskew.APIServer,
		BinaryVersion: target.Binary, EmulationVersion: target.Emulation, MinCompatibilityVersion: target.MinCompatibility})
	if err != nil {
		return s, err
	}
	all := []versionskew.Component{joining}
	for _, c := range report.Status.Components {
		comp, err := componentOf(c)
		if err != nil {
			return s, fmt.Errorf("the VersionSkew report: %w", err)
		}
		all = append(all, comp)
	}
	for _, v := range versionskew.Check(all) {
		if v.Component == targetName || v.Peer == targetName {
			s.Target = append(s.Target, v)
		}
	}
	return s, nil
}

// componentOf reads a component of the report.
func componentOf(c versionskew.ComponentStatus) (versionskew.Component, error) {
	v, err := wire.ParseComponentVersions(c.BinaryVersion, c.EmulationVersion, c.MinCompatibilityVersion)
	if err != nil {
		return versionskew.Component{}, fmt.Errorf("component %s: %w", c.Name, err)
	}
	return versionskew.Component{Name: c.Name, Kind: c.Kind, Role: c.Role, ComponentVersions: v}, nil
}

// Print writes the components, the current verdict and the target's.
func (s SkewReport) Print(w io.Writer) error {
	if !s.Observed {
		_, err := fmt.Fprintln(w, "Version skew: the cluster keeps no VersionSkew report (compatibility.concord.io/v1alpha1); not checked.")
		return err
	}
	fmt.Fprintln(w, "Version skew (the servers' VersionSkew report):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tKIND\tBINARY\tEMULATION\tMIN COMPATIBILITY\tWITHIN ALLOWANCE")
	for _, c := range s.Components {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\n", c.Name, c.Kind, c.BinaryVersion, c.EmulationVersion, c.MinCompatibilityVersion, c.WithinAllowance)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c := s.Current; c != nil {
		fmt.Fprintf(w, "Now: %s=%s (%s): %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	if len(s.Target) == 0 {
		_, err := fmt.Fprintf(w, "A server of release %s (emulation %s, min compatibility %s) would be within the allowance.\n", s.target.Binary, s.target.Emulation, s.target.MinCompatibility)
		return err
	}
	fmt.Fprintf(w, "Warning: a server of release %s (emulation %s, min compatibility %s) would be outside the allowance beside the components running now (replace them first, or step through the releases between):\n", s.target.Binary, s.target.Emulation, s.target.MinCompatibility)
	for _, v := range s.Target {
		if _, err := fmt.Fprintf(w, "  - %s\n", v.Message); err != nil {
			return err
		}
	}
	return nil
}

// Err is nil when the control plane is within the allowance now, and otherwise one
// line wrapping ErrNotSafe. That a server of the target would be outside it is a
// warning (Print): the components it would be outside of may be the ones the rollout
// replaces, which only the operator knows.
func (s SkewReport) Err() error {
	if c := s.Current; c != nil && c.Status != metav1.ConditionTrue {
		return fmt.Errorf("version skew is %w: the control plane is outside the version skew allowance now: %s", ErrNotSafe, c.Message)
	}
	return nil
}
