package safety

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A failed scenario prints, of each server's log, the lines on the objects its
// anomalies name and on the elections: CI keeps nothing else of the logs.
func TestLogExcerpt(t *testing.T) {
	anomalies := []string{
		"a settled fleet wrote /registry/storagemigration.k8s.io/storageversionmigrations/mutatingadmissionpolicies.admissionregistration.k8s.io-2 4 times in 3s",
		"a settled fleet wrote /registry/core/configmaps/safety/cm-1 2 times in 3s",
		"a settled fleet wrote /registry/core/configmaps/safety/cm-1 3 times in 3s",
		"this history is not linearizable: widget-3",
	}
	names := anomalyObjects(anomalies)
	if want := []string{"cm-1", "mutatingadmissionpolicies.admissionregistration.k8s.io-2"}; !slices.Equal(names, want) {
		t.Fatalf("objects named: %v, want %v", names, want)
	}
	log := []string{
		"=== 2026-11-29T01:06:28Z server --etcd-servers http://127.0.0.1:1",
		`I1129 01:06:29.124903 election.go:73] "Leading" server="safety-0" election="concord-controllers"`,
		`I1129 01:06:32.320829 leaderelection.go:493] "Lease is held by and has not yet expired" server="safety-1"`,
		`I1129 01:07:07.315449 resource.go:321] "Storage version changed; migration started" migration="mutatingadmissionpolicies.admissionregistration.k8s.io-2" ` + strings.Repeat("x", 1000),
		`I1129 01:07:08.000000 other.go:1] "Unrelated"`,
	}
	var many []string
	for range 2 * excerptLines {
		many = append(many, `I1129 01:06:40.000000 cm.go:1] "Wrote" name="cm-1"`)
	}
	p := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(p, []byte(strings.Join(append(many, log...), "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(logExcerpt(p, names), "\n")
	if len(got) != excerptLines {
		t.Fatalf("%d lines, want the last %d", len(got), excerptLines)
	}
	tail := got[len(got)-3:]
	if tail[0] != log[0] || tail[1] != log[1] || !strings.HasPrefix(tail[2], log[3][:100]) || len(tail[2]) != excerptLineBytes {
		t.Fatalf("excerpt ends with:\n%s", strings.Join(tail, "\n"))
	}
	if slices.Contains(got, log[2]) || slices.Contains(got, log[4]) {
		t.Fatalf("excerpt has lines on neither an election's leader nor a named object:\n%s", strings.Join(got, "\n"))
	}
}
