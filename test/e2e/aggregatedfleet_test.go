package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/test/ports"
	"github.com/concordproject/concord/wire"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The whole story of KEP-2339 for aggregated APIs, with real processes: a Concord
// aggregator, and behind one APIService two Concord servers of different releases
// (emulation 1.36 and 1.37) sharing their own etcd, each publishing its StorageVersion
// entries to the aggregator under the identity the APIService names. A storage-version
// change of their custom resource reaches the aggregator as two entries, agreement,
// and a migration the aggregator's migrator runs through its proxy, which leaves every
// object in etcd in the new version; a rollback does the same the other way.
func TestConcordFleetBehindConcord(t *testing.T) {
	t.Parallel()
	bin := buildConcord(t)
	dir := t.TempDir()
	kf, frontKubeconfig, caFile := startFront(t, bin, dir)
	// The back servers' identity at the aggregator.
	kf.must(t, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: back\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: apiserver\n  namespace: back\n", "apply", "-f", "-")
	kf.must(t, strings.ReplaceAll(publisherGrants, "namespace: wardle}]", "namespace: back}]"), "apply", "-f", "-")
	token := strings.TrimSpace(kf.must(t, "", "create", "token", "apiserver", "-n", "back", "--duration=1h"))
	aggregatorKubeconfig := filepath.Join(dir, "aggregator.kubeconfig")
	writeTokenKubeconfig(t, aggregatorKubeconfig, loadKubeconfig(t, frontKubeconfig), token)

	etcd := etcdtest.Start(t)
	var backs []*kubectl
	var backPorts []int
	for i, emulation := range []string{"1.36", "1.37"} {
		data := filepath.Join(dir, fmt.Sprint("back-", i))
		port := ports.Free(t)
		logs := process(t, bin, "server", "--data-dir", data, "--secure-port", fmt.Sprint(port),
			"--etcd-servers", strings.Join(etcd.Endpoints(), ","), "--emulation-version", emulation,
			"--requestheader-client-ca-file", caFile, "--requestheader-allowed-names", "front-proxy-client",
			"--aggregator-kubeconfig", aggregatorKubeconfig, "--aggregated-groups", "stable.example.com",
			"--disable-storage-migration") // only the aggregator's migrator rewrites
		waitForFile(t, filepath.Join(data, "admin.kubeconfig"), logs)
		backs = append(backs, newKubectl(t, filepath.Join(data, "admin.kubeconfig")))
		backPorts = append(backPorts, port)
	}
	kb := backs[len(backs)-1]
	// Until an APIService names their identity, the aggregator refuses their entries,
	// and the back servers do not serve the new resource: they serve nothing they have
	// not reported to the aggregator.
	kb.must(t, widgetsTwoVersions("v1"), "apply", "-f", "-")
	time.Sleep(2 * time.Second)
	if out := kb.must(t, "", "api-resources", "--api-group=stable.example.com"); strings.Contains(out, "widgets") {
		t.Fatalf("widgets served before the aggregator accepted their entries:\n%s", out)
	}
	kf.must(t, fleetRegistration(backPorts), "apply", "-f", "-")
	// The proxy picks either back server, so both must serve widgets before any is
	// created through it.
	for i, k := range backs {
		waitKubectl(t, k, fmt.Sprint("widgets served by back server ", i), "widgets", "api-resources", "--api-group=stable.example.com")
	}
	waitFleetEntries(t, kf, "v1")
	waitKubectl(t, kf, "the APIService Available", "True",
		"get", "apiservice", "v1.stable.example.com", "-o", `jsonpath={.status.conditions[?(@.type=="Available")].status}`)
	kubectlUntil(t, kf, nil, "widgets listed through the front", func(string) bool { return true },
		"get", "widgets", "-n", "default", "-o", "name")
	for i := range 5 {
		kf.must(t, fmt.Sprintf("apiVersion: stable.example.com/v1\nkind: Widget\nmetadata:\n  name: w%d\n  namespace: default\nspec:\n  size: %d\n", i, i), "create", "-f", "-")
	}

	for _, version := range []string{"v2", "v1"} { // the change, then the rollback
		kb.must(t, widgetsTwoVersions(version), "apply", "-f", "-")
		waitFleetEntries(t, kf, version)
		// The aggregator's migrator rewrote every widget through its proxy (the back
		// servers run no migration of their own here), and records the version as
		// persisted.
		waitStoredIn(t, etcd, "stable.example.com/"+version)
		hash := wire.StorageVersionHash("stable.example.com", version, "Widget")
		waitKubectl(t, kf, "the widgets' storage state persisted in "+version, "["+`"`+hash+`"`+"] "+hash, "get", "storagestate", "widgets.stable.example.com",
			"-o", `jsonpath={.status.persistedStorageVersionHashes}{" "}{.status.currentStorageVersionHash}`)
	}
}

// waitFleetEntries waits until the aggregator's StorageVersion of widgets holds two
// entries, both encoding in version, and their common version.
func waitFleetEntries(t *testing.T, kf *kubectl, version string) {
	t.Helper()
	want := "stable.example.com/" + version
	waitKubectl(t, kf, "both back servers' entries agreeing on "+want, want+" "+want+" "+want, "get", "storageversion", "stable.example.com.widgets",
		"-o", `jsonpath={range .status.storageVersions[*]}{.encodingVersion}{" "}{end}{.status.commonEncodingVersion}`)
}

// waitStoredIn waits until every widget in the back servers' etcd is stored in
// apiVersion.
func waitStoredIn(t *testing.T, etcd *clientv3.Client, apiVersion string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		resp, err := etcd.Get(ctx, "/registry/stable.example.com/widgets/", clientv3.WithPrefix())
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		stale := 0
		for _, kv := range resp.Kvs {
			if !strings.Contains(string(kv.Value), `"apiVersion":"`+apiVersion+`"`) {
				stale++
			}
		}
		if len(resp.Kvs) == 5 && stale == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d widgets in etcd, %d not in %s", len(resp.Kvs), stale, apiVersion)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// widgetsTwoVersions is a definition of widgets served in v1 and v2, stored in
// storage.
func widgetsTwoVersions(storage string) string {
	version := func(name string) string {
		return fmt.Sprintf(`  - name: %s
    served: true
    storage: %t
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`, name, name == storage)
	}
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.stable.example.com
spec:
  group: stable.example.com
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  scope: Namespaced
  versions:
` + version("v1") + version("v2")
}

// fleetRegistration registers the back servers, one EndpointSlice each, behind one
// APIService whose publishers are their identity.
func fleetRegistration(backPorts []int) string {
	out := registration("back", backPorts[0], "stable.example.com", "v1", "")
	out = strings.Replace(out, "  name: v1.stable.example.com\n", "  name: v1.stable.example.com\n  annotations:\n    storageversion.concord.io/publishers: system:serviceaccount:back:apiserver\n", 1)
	for i, port := range backPorts[1:] {
		out += fmt.Sprintf(`---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: api-%d
  namespace: back
  labels:
    kubernetes.io/service-name: api
addressType: IPv4
endpoints:
- addresses: ["127.0.0.1"]
ports:
- name: https
  port: %d
`, i+1, port)
	}
	return out
}
