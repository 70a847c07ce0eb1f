package integration

import (
	"strings"
	"testing"

	"github.com/concordproject/concord/harness"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// sharedTest is a test that runs on a cluster other tests use at the same time. It
// keeps to the namespace it is given (ns, made for it) and to cluster-scoped objects
// whose names no other test uses; it does not stop, restart or reconfigure a server,
// add admission (webhooks, policies) or anything else every request goes through, or
// look at what is cluster-wide (discovery, metrics, every namespace's objects, etcd's
// whole keyspace).
type sharedTest struct {
	name string
	run  func(t *testing.T, c *harness.Cluster, ns string)
}

// onOneServer are the tests that share a one-server cluster.
var onOneServer = []sharedTest{
	{"GenerateNameDryRunAndPreconditions", generateNameDryRunAndPreconditions},
	{"FinalizersHoldDeletion", finalizersHoldDeletion},
	{"UnconditionalUpdate", unconditionalUpdate},
	{"BadInputIsRefusedAndWritesNothing", badInputIsRefusedAndWritesNothing},
	{"FieldValidation", fieldValidation},
	{"Authentication", authentication},
	{"BadQueryParameters", badQueryParameters},
	{"MissingTypeMeta", missingTypeMeta},
	{"ListPagingAndSelectors", listPagingAndSelectors},
	{"PatchTypes", patchTypes},
	{"ServerSideApply", serverSideApply},
	{"SubresourceWritesDoNotCreate", subresourceWritesDoNotCreate},
	{"Jobs", batchJobs},
	{"DeleteCollection", deleteCollection},
	{"GenerationAndOwnerReferences", generationAndOwnerReferences},
	{"CRDDeletionStarts", crdDeletionStarts},
	{"ValidationRatcheting", validationRatcheting},
	{"PodEviction", podEviction},
	{"PodEphemeralContainersAndResize", podEphemeralContainersAndResize},
	{"PodExecNeedsCreate", podExecNeedsCreate},
	{"PodBinding", podBinding},
	{"ResourceQuotaServices", resourceQuotaServices},
	{"EventFieldSelectors", eventFieldSelectors},
}

// onTwoServers are the tests that share a two-server cluster.
var onTwoServers = []sharedTest{
	{"CRUDAcrossServers", crudAcrossServers},
	{"ResourceQuota", resourceQuota},
}

// TestOnOneServer runs the tests of onOneServer, each in parallel with the others (and
// with the package's other tests), on one cluster of one server: starting a cluster
// costs more CPU than most tests do.
func TestOnOneServer(t *testing.T) {
	t.Parallel()
	runShared(t, harness.Start(t, 1), onOneServer)
}

// TestOnTwoServers runs the tests of onTwoServers as TestOnOneServer runs its own.
func TestOnTwoServers(t *testing.T) {
	t.Parallel()
	runShared(t, harness.Start(t, 2), onTwoServers)
}

func runShared(t *testing.T, c *harness.Cluster, tests []sharedTest) {
	for _, st := range tests {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			c.LogOnFailure(t)
			st.run(t, c, sharedNamespace(t, c, st.name))
		})
	}
}

// sharedNamespace creates the namespace of the shared test name: its name in lower
// case. It is left for the cluster's end.
func sharedNamespace(t *testing.T, c *harness.Cluster, name string) string {
	t.Helper()
	ns := strings.ToLower(name)
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		t.Fatalf("the shared test %s needs a name that is a namespace's in lower case: %v", name, errs)
	}
	_, err := c.Servers[0].Clientset(t).CoreV1().Namespaces().Create(t.Context(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	return ns
}
