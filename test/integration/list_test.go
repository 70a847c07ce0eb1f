package integration

import (
	"fmt"
	"testing"

	"github.com/concordproject/concord/harness"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func listPagingAndSelectors(t *testing.T, c *harness.Cluster, ns string) {
	ctx := t.Context()
	cms := c.Servers[0].Clientset(t).CoreV1().ConfigMaps(ns)
	for i := 0; i < 25; i++ {
		cm := configMap(fmt.Sprintf("cm-%02d", i), nil)
		cm.Labels = map[string]string{"parity": []string{"even", "odd"}[i%2]}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Pages of 10 from one snapshot, with a write in between that must not show.
	first, err := cms.List(ctx, metav1.ListOptions{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Items) != 10 || first.Continue == "" || first.RemainingItemCount == nil || *first.RemainingItemCount != 15 {
		t.Fatalf("first page: %d items, continue %q, remaining %v", len(first.Items), first.Continue, first.RemainingItemCount)
	}
	if _, err := cms.Create(ctx, configMap("cm-99", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, it := range first.Items {
		names = append(names, it.Name)
	}
	cont := first.Continue
	for cont != "" {
		page, err := cms.List(ctx, metav1.ListOptions{Limit: 10, Continue: cont})
		if err != nil {
			t.Fatal(err)
		}
		if page.ResourceVersion != first.ResourceVersion {
			t.Fatalf("page resourceVersion %s, want the snapshot's %s", page.ResourceVersion, first.ResourceVersion)
		}
		for _, it := range page.Items {
			names = append(names, it.Name)
		}
		cont = page.Continue
	}
	if len(names) != 25 || names[24] != "cm-24" {
		t.Fatalf("paged list saw %d names (last %q), want the 25 of the snapshot", len(names), names[len(names)-1])
	}

	odd, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "parity=odd", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(odd.Items) != 5 || odd.Continue == "" {
		t.Fatalf("selector page: %d items, continue %q", len(odd.Items), odd.Continue)
	}
	for _, it := range odd.Items {
		if it.Labels["parity"] != "odd" {
			t.Fatalf("label selector let %s through", it.Name)
		}
	}
	byName, err := cms.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=cm-07"})
	if err != nil {
		t.Fatal(err)
	}
	if len(byName.Items) != 1 || byName.Items[0].Name != "cm-07" {
		t.Fatalf("field selector returned %d items", len(byName.Items))
	}
	if _, err := cms.List(ctx, metav1.ListOptions{FieldSelector: "spec.nope=1"}); err == nil {
		t.Fatal("unsupported field selector accepted")
	}

	// All namespaces, and the metadata client (PartialObjectMetadataList).
	all, err := c.Servers[0].Clientset(t).CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The 26 of the test, the servers' own in kube-system (the request-header
	// configuration aggregated servers read), and other tests'.
	ours, system := 0, 0
	for _, cm := range all.Items {
		switch cm.Namespace {
		case ns:
			ours++
		case metav1.NamespaceSystem:
			system++
		}
	}
	if ours != 26 || system == 0 {
		t.Fatalf("all-namespaces list has %d items in %s and %d in kube-system, want 26 and kube-system's", ours, ns, system)
	}
	meta, err := c.Servers[0].Metadata(t).Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Items) != 3 || meta.Items[0].Name == "" || meta.Items[0].UID == "" {
		t.Fatalf("metadata list: %+v", meta.Items)
	}
}
