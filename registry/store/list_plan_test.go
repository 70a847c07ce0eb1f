package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/concordproject/concord/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestListPlan runs testdata/list_plan: Kubernetes' matrix of a list's
// resourceVersion, resourceVersionMatch, limit and continue, and where each list reads
// from. Each line of a plan directive's input is one list's options:
//
//	[rv=<resourceVersion>] [match=<resourceVersionMatch>] [limit=<n>] [continue=<key>@<revision>|continue=<raw token>]
//
// and the output says where it reads (at a revision, not older than one, or the
// current revision; from which key) or the error with its HTTP code. Run with
// -rewrite to update the file.
func TestListPlan(t *testing.T) {
	const prefix = "/registry/configmaps/"
	gr := schema.GroupResource{Resource: "configmaps"}
	datadriven.RunTest(t, "testdata/list_plan", func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "plan" {
			d.Fatalf(t, "unknown command %q", d.Cmd)
		}
		var b strings.Builder
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			opts := listOptionsOf(t, prefix, line)
			at, err := planList(prefix, gr, opts)
			fmt.Fprintf(&b, "%s: %s\n", line, describeStart(at, err))
		}
		return b.String()
	})
}

// listOptionsOf parses one line of a plan directive.
func listOptionsOf(t *testing.T, prefix, line string) metav1.ListOptions {
	var opts metav1.ListOptions
	for _, field := range strings.Fields(line) {
		key, val, _ := strings.Cut(field, "=")
		switch key {
		case "rv":
			opts.ResourceVersion = val
		case "match":
			opts.ResourceVersionMatch = metav1.ResourceVersionMatch(val)
		case "limit":
			if _, err := fmt.Sscan(val, &opts.Limit); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
		case "continue":
			opts.Continue = val
			if k, rev, ok := strings.Cut(val, "@"); ok {
				var n int64
				if _, err := fmt.Sscan(rev, &n); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				token, err := storage.EncodeContinue(prefix, prefix+k, n)
				if err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				opts.Continue = token
			}
		default:
			t.Fatalf("%q: unknown option %q", line, key)
		}
	}
	return opts
}

// describeStart says where a list reads from, or how it is refused.
func describeStart(at listStart, err error) string {
	if err != nil {
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			return "not a Status: " + err.Error()
		}
		s := status.Status()
		return fmt.Sprintf("%d %s: %s", s.Code, s.Reason, s.Message)
	}
	var parts []string
	switch {
	case at.rev > 0:
		parts = append(parts, fmt.Sprintf("exactly at %d", at.rev))
	case at.minRV > 0:
		parts = append(parts, fmt.Sprintf("current, not older than %d", at.minRV))
	default:
		parts = append(parts, "current")
	}
	if at.fromContinue {
		parts = append(parts, "from "+at.key)
	}
	return strings.Join(parts, ", ")
}
