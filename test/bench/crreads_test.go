package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

const (
	crObjects  = 3000 // custom resources listed
	crWatchers = 32   // watchers of a fan-out
	crCreates  = 1000 // creations every watcher receives
	crListTime = 10 * time.Second
	crNS       = "bench-cr"
)

var benchGadgets = schema.GroupVersionResource{Group: "reads.example.com", Version: "v1", Resource: "gadgets"}

// BenchmarkCustomResourceReads measures, through a Concord server, whether CBOR
// (KEP-4222) pays for custom resources: client-go's dynamic client, once as shipped
// (JSON) and once with its ClientsAllowCBOR feature (CBOR answers), lists 3,000
// structured objects (a pod template each, about 1.2 KiB) in pages of 500 for 10 s,
// and 32 such clients watch 1,000 creations; it reports items and events per second
// and the server's and the client's CPU per item and per event. Run it with
// -benchtime 1x:
//
//	go test ./test/bench -run '^$' -bench CustomResourceReads -benchtime 1x
func BenchmarkCustomResourceReads(b *testing.B) {
	s := newSuite(b)
	var cfg *rest.Config
	setup := sync.OnceValue(func() error {
		cl, err := s.start()
		if err != nil {
			return err
		}
		if cfg, err = clientcmd.BuildConfigFromFlags("", filepath.Join(s.dir, "server", "admin.kubeconfig")); err != nil {
			return err
		}
		cfg.QPS = -1
		return seedGadgets(b.Context(), cl, cfg)
	})
	rows := map[string][]figure{}
	for _, format := range []string{"json", "cbor"} {
		b.Run(format, func(b *testing.B) {
			if err := setup(); err != nil {
				b.Fatal(err)
			}
			clientfeaturestesting.SetFeatureDuringTest(b, clientfeatures.ClientsAllowCBOR, format == "cbor")
			figs, err := customResourceReads(b.Context(), s.cluster(b), cfg)
			if err != nil {
				b.Fatal(err)
			}
			for _, f := range figs {
				b.ReportMetric(f.value, f.unit)
			}
			b.ReportMetric(0, "ns/op")
			rows[format] = figs
		})
	}
	if len(rows["json"]) == 0 || len(rows["cbor"]) == 0 {
		return
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "\nfigure\tJSON\tCBOR\tCBOR / JSON\t")
	for i, f := range rows["json"] {
		c := rows["cbor"][i]
		fmt.Fprintf(w, "%s\t%.2f\t%.2f\t%.2f\t\n", f.label, f.value, c.value, ratioOf(c.value, f.value))
	}
	_ = w.Flush()
}

// seedGadgets defines the gadgets and creates crObjects of them, through the server.
func seedGadgets(ctx context.Context, cl *cluster, cfg *rest.Config) error {
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: benchGadgets.Resource + "." + benchGadgets.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: benchGadgets.Group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: benchGadgets.Resource, Kind: "Gadget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: benchGadgets.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr.To(true)}}}}}},
		},
	}
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := cl.clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: crNS}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	gadgets := dyn.Resource(benchGadgets).Namespace(crNS)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := gadgets.Create(ctx, gadgetObject("g-probe"), metav1.CreateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			return err // NotFound: the definition is not served yet
		}
	}
	_, _, err = fanOut(ctx, crObjects-1, readPathConcurrency, func(ctx context.Context, i int) error {
		_, err := gadgets.Create(ctx, gadgetObject(objectName('g', int64(i))), metav1.CreateOptions{})
		return err
	})
	return err
}

// gadgetObject is a gadget with the structured shape of BenchmarkCustomResourceCodecs.
func gadgetObject(name string) *unstructured.Unstructured {
	obj := structuredObject(0)
	obj["apiVersion"], obj["kind"] = benchGadgets.GroupVersion().String(), "Gadget"
	obj["metadata"] = map[string]any{"name": name}
	return &unstructured.Unstructured{Object: obj}
}

// customResourceReads lists and watches gadgets with dynamic clients made now (so
// with the client features as they are now) and returns the figures.
func customResourceReads(ctx context.Context, cl *cluster, cfg *rest.Config) ([]figure, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	gadgets := dyn.Resource(benchGadgets).Namespace(crNS)
	items, lists := 0, 0
	before, err := cl.cpu()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for ; lists < 3 || time.Since(start) < crListTime; lists++ {
		opts := metav1.ListOptions{Limit: listPage}
		for {
			page, err := gadgets.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			items += len(page.Items)
			if opts.Continue = page.GetContinue(); opts.Continue == "" {
				break
			}
		}
	}
	elapsed := time.Since(start)
	after, err := cl.cpu()
	if err != nil {
		return nil, err
	}
	figs := rateFigures("list, pages of 500,", "item", items, elapsed, after.minus(before))
	watched, err := gadgetFanOut(ctx, cl, cfg)
	return append(figs, watched...), err
}

// gadgetFanOut opens crWatchers watches of the gadgets, each on a client of its own
// (as separate controllers would be), makes crCreates creations through another, and
// times until every watcher has received every ADDED event.
func gadgetFanOut(ctx context.Context, cl *cluster, cfg *rest.Config) ([]figure, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	writer, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	head, err := writer.Resource(benchGadgets).Namespace(crNS).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	watches := make([]watch.Interface, crWatchers)
	for i := range watches {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		if watches[i], err = dyn.Resource(benchGadgets).Namespace(crNS).Watch(ctx, metav1.ListOptions{ResourceVersion: head.GetResourceVersion()}); err != nil {
			return nil, err
		}
	}
	before, err := cl.cpu()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var received atomic.Int64
	errs := make(chan error, crWatchers+1)
	for _, w := range watches {
		go func() { errs <- receiveGadgets(w, crCreates, &received) }()
	}
	go func() {
		_, _, err := fanOut(ctx, crCreates, watchWriterConcurrency, func(ctx context.Context, i int) error {
			_, err := writer.Resource(benchGadgets).Namespace(crNS).Create(ctx, gadgetObject(objectName('n', int64(i))+fmt.Sprint(start.UnixNano())), metav1.CreateOptions{})
			return err
		})
		errs <- err
	}()
	if err := collect(errs, crWatchers+1, &received, int64(crWatchers*crCreates), cancel); err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	after, err := cl.cpu()
	if err != nil {
		return nil, err
	}
	return rateFigures(fmt.Sprintf("watch W=%d, %d creates at c=%d,", crWatchers, crCreates, watchWriterConcurrency), "event",
		crWatchers*crCreates, elapsed, after.minus(before)), nil
}

// receiveGadgets reads n ADDED events from w, then stops it.
func receiveGadgets(w watch.Interface, n int, received *atomic.Int64) error {
	defer w.Stop()
	for got := 0; got < n; got++ {
		ev, ok := <-w.ResultChan()
		if !ok {
			return errors.New("the watch ended")
		}
		if ev.Type != watch.Added {
			return fmt.Errorf("watch event %d is %s: %v", got, ev.Type, ev.Object)
		}
		received.Add(1)
	}
	return nil
}
