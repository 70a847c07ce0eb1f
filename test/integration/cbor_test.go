package integration

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/concordproject/concord/harness"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
)

// contentTypes records the Content-Type of every request a client sends and of every
// response it receives, by request kind ("GET", "POST", ..., "WATCH").
type contentTypes struct {
	mu        sync.Mutex
	requests  map[string][]string
	responses map[string][]string
}

func (c *contentTypes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		kind := req.Method
		switch {
		case req.URL.Query().Get("watch") == "true":
			kind = "WATCH"
		case req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/gadgets"):
			kind = "LIST"
		}
		resp, err := rt.RoundTrip(req)
		c.mu.Lock()
		defer c.mu.Unlock()
		if ct := req.Header.Get("Content-Type"); ct != "" {
			c.requests[kind] = append(c.requests[kind], ct)
		}
		if err == nil {
			c.responses[kind] = append(c.responses[kind], resp.Header.Get("Content-Type"))
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func (c *contentTypes) of(m map[string][]string, kind string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(m[kind])
}

// TestCustomResourcesInCBOR: a dynamic client with client-go's ClientsAllowCBOR and
// ClientsPreferCBOR features speaks CBOR (KEP-4222) with the server for custom
// resources: its creates, updates and applies are CBOR bodies, its gets, lists (paged,
// from the watch cache) and watches CBOR answers, and what it reads back is what JSON
// would have given: integers, numbers, lists, defaults applied and unknown fields
// pruned. Built-in kinds keep JSON and protobuf; errors reach it as Status.
func TestCustomResourcesInCBOR(t *testing.T) {
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.ClientsAllowCBOR, true)
	clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.ClientsPreferCBOR, true)
	// CBOR is served while the CBORServingAndStorage gate is on, as in Kubernetes
	// (test/hostile shows the 415 while it is off).
	c := harness.Start(t, 1, withGates("", []string{"CBORServingAndStorage=true"}))
	ctx := t.Context()
	gvr := schema.GroupVersionResource{Group: "cbor.example.com", Version: "v1", Resource: "gadgets"}
	defineGadgets(t, c, gvr)

	cfg := c.Servers[0].Config()
	seen := &contentTypes{requests: map[string][]string{}, responses: map[string][]string{}}
	cfg.Wrap(seen.wrap)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gadgets := dyn.Resource(gvr).Namespace("default")
	w, err := gadgets.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	const n = 5
	for i := range n {
		created, err := gadgets.Create(ctx, gadget(fmt.Sprint("g-", i), int64(i)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkGadget(t, created, int64(i))
	}
	got, err := gadgets.Get(ctx, "g-3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkGadget(t, got, 3)
	if err := unstructured.SetNestedField(got.Object, int64(30), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	updated, err := gadgets.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(updated.Object, "spec", "replicas"); r != 30 {
		t.Fatalf("updated replicas %d, want 30", r)
	}
	applied, err := gadgets.Apply(ctx, "g-applied", gadget("g-applied", 7), metav1.ApplyOptions{FieldManager: "cbor-test"})
	if err != nil {
		t.Fatal(err)
	}
	checkGadget(t, applied, 7)

	// A paged list, from the watch cache: the items' CBOR is kept between lists.
	var names []string
	opts := metav1.ListOptions{Limit: 2}
	for {
		page, err := gadgets.List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		for i := range page.Items {
			names = append(names, page.Items[i].GetName())
		}
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			break
		}
	}
	if want := []string{"g-0", "g-1", "g-2", "g-3", "g-4", "g-applied"}; !slices.Equal(names, want) {
		t.Fatalf("listed %v, want %v", names, want)
	}

	added := 0
	for added < n+1 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch ended")
			}
			if ev.Type == watch.Added {
				added++
				u := ev.Object.(*unstructured.Unstructured)
				if r, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); !ok || (u.GetName() != "g-applied" && fmt.Sprint("g-", r) != u.GetName()) {
					t.Fatalf("watch event %s for %s: replicas %d, %v", ev.Type, u.GetName(), r, ok)
				}
			}
		case <-time.After(wait.ForeverTestTimeout):
			t.Fatalf("%d of %d ADDED events", added, n+1)
		}
	}

	// A WatchList's starting state comes from the cache as the list's items did.
	wl, err := gadgets.Watch(ctx, metav1.ListOptions{SendInitialEvents: ptrTo(true), AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer wl.Stop()
	var initial []string
	for ev := range wl.ResultChan() {
		u := ev.Object.(*unstructured.Unstructured)
		if ev.Type == watch.Bookmark {
			break
		}
		if ev.Type != watch.Added {
			t.Fatalf("initial event %s %s", ev.Type, u.GetName())
		}
		if u.GetName() == "g-3" {
			if r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); r != 30 {
				t.Fatalf("initial g-3 has replicas %d, want 30", r)
			}
		} else {
			want := int64(len(initial)) // g-i has i replicas
			if u.GetName() == "g-applied" {
				want = 7
			}
			checkGadget(t, u, want)
		}
		initial = append(initial, u.GetName())
	}
	if !slices.Equal(initial, names) {
		t.Fatalf("initial events for %v, want %v", initial, names)
	}

	_, err = gadgets.Get(ctx, "missing", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("get of a missing gadget: %v, want NotFound", err)
	}

	for kind, want := range map[string]string{"POST": "application/cbor", "PUT": "application/cbor", "PATCH": "application/apply-patch+cbor"} {
		if got := seen.of(seen.requests, kind); len(got) == 0 || got[0] != want {
			t.Errorf("%s request bodies in %v, want %s", kind, got, want)
		}
	}
	for kind, want := range map[string]string{"POST": "application/cbor", "PUT": "application/cbor", "PATCH": "application/cbor",
		"LIST": "application/cbor", "WATCH": "application/cbor-seq"} {
		if got := seen.of(seen.responses, kind); len(got) == 0 || slices.ContainsFunc(got, func(ct string) bool { return ct != want }) {
			t.Errorf("%s answers in %v, want %s", kind, got, want)
		}
	}
	// The gets: the gadget in CBOR, then the NotFound as a JSON Status (the client
	// accepts JSON as well; errors are negotiated as for built-in kinds).
	if got := seen.of(seen.responses, "GET"); !slices.Equal(got, []string{"application/cbor", "application/json"}) {
		t.Errorf("GET answers in %v, want the object in application/cbor and the error in application/json", got)
	}

	// Built-in kinds are not served in CBOR, as by kube-apiserver: 406 to a client that
	// accepts nothing else.
	rc := c.Servers[0].Clientset(t).CoreV1().RESTClient()
	res := rc.Get().AbsPath("/api/v1/namespaces/default/configmaps").SetHeader("Accept", "application/cbor").Do(ctx)
	var code int
	res.StatusCode(&code)
	if code != http.StatusNotAcceptable {
		t.Fatalf("configmaps in CBOR only: %d, want 406", code)
	}
}

// defineGadgets defines a custom resource with integer, number, list and defaulted
// fields, and waits until it is served.
func defineGadgets(t *testing.T, c *harness.Cluster, gvr schema.GroupVersionResource) {
	t.Helper()
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"replicas": {Type: "integer"},
		"ratio":    {Type: "number"},
		"tags":     {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
		"mode":     {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"auto"`)}},
	}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: gvr.Resource + "." + gvr.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gvr.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: gvr.Resource, Kind: "Gadget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: gvr.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": spec}}}}},
		},
	}
	cs := crdClient(t, c.Servers[0])
	if _, err := cs.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCRD(t, cs, crd.Name, "established", established)
	waitServedEverywhere(t, c, gvr, time.Now())
}

// gadget is a Gadget with every kind of value, and a field its schema does not know.
func gadget(name string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cbor.example.com/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"replicas": replicas, "ratio": 0.25, "tags": []any{"a", "b"},
			"unknown": "pruned"},
	}}
}

// checkGadget checks what a server answered for a gadget created with replicas.
func checkGadget(t *testing.T, u *unstructured.Unstructured, replicas int64) {
	t.Helper()
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	want := map[string]any{"replicas": replicas, "ratio": 0.25, "tags": []any{"a", "b"}, "mode": "auto"}
	if fmt.Sprint(spec) != fmt.Sprint(want) {
		t.Fatalf("%s: spec %v, want %v (defaulted, unknown field pruned)", u.GetName(), spec, want)
	}
	if _, ok := spec["replicas"].(int64); !ok {
		t.Fatalf("%s: replicas is a %T, want int64", u.GetName(), spec["replicas"])
	}
	if u.GetUID() == "" || u.GetResourceVersion() == "" {
		t.Fatalf("%s: no uid or resourceVersion: %v", u.GetName(), u.Object["metadata"])
	}
}
