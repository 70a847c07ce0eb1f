package flowcontrol

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/reconcile"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/client-go/informers"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	flowcontrollisters "k8s.io/client-go/listers/flowcontrol/v1"
	"k8s.io/klog/v2"
)

// kind tells FlowSchemas from PriorityLevelConfigurations in a configKey.
type kind string

const (
	flowSchemaKind    kind = "FlowSchema"
	priorityLevelKind kind = "PriorityLevelConfiguration"
)

// configKey names one bootstrap object.
type configKey struct {
	kind kind
	name string
}

// wanted is one bootstrap object and whether it is mandatory.
type wanted struct {
	obj       metav1.Object
	mandatory bool
}

// bootstrapper keeps the bootstrap configuration in the API. Every server runs one,
// as every kube-apiserver does: creates race harmlessly (AlreadyExists), updates are
// preconditioned on the resourceVersion read.
type bootstrapper struct {
	flowSchemas    flowcontrolclient.FlowSchemaInterface
	priorityLevels flowcontrolclient.PriorityLevelConfigurationInterface
	// The informers' caches, which the controller waits for: what is in the API.
	flowSchemaLister    flowcontrollisters.FlowSchemaLister
	priorityLevelLister flowcontrollisters.PriorityLevelConfigurationLister
	want                map[configKey]wanted
	ctrl                *reconcile.Controller[configKey]

	mu   sync.Mutex
	done *health.PostStartHook // marked once every key was ensured
	seen map[configKey]bool
}

func newBootstrapper(client flowcontrolclient.FlowcontrolV1Interface, factory informers.SharedInformerFactory, metrics *reconcile.Metrics) (*bootstrapper, error) {
	b := &bootstrapper{flowSchemas: client.FlowSchemas(), priorityLevels: client.PriorityLevelConfigurations(), want: map[configKey]wanted{}}
	for _, pl := range bootstrap.MandatoryPriorityLevelConfigurations {
		b.want[configKey{priorityLevelKind, pl.Name}] = wanted{pl, true}
	}
	for _, pl := range bootstrap.SuggestedPriorityLevelConfigurations {
		b.want[configKey{priorityLevelKind, pl.Name}] = wanted{pl, false}
	}
	for _, fs := range bootstrap.MandatoryFlowSchemas {
		b.want[configKey{flowSchemaKind, fs.Name}] = wanted{fs, true}
	}
	for _, fs := range bootstrap.SuggestedFlowSchemas {
		b.want[configKey{flowSchemaKind, fs.Name}] = wanted{fs, false}
	}
	b.ctrl = reconcile.New("priority-and-fairness-bootstrap", reconcile.Func[configKey](b.reconcile),
		reconcile.Options[configKey]{Workers: 1, Metrics: metrics})
	v1 := factory.Flowcontrol().V1()
	b.flowSchemaLister, b.priorityLevelLister = v1.FlowSchemas().Lister(), v1.PriorityLevelConfigurations().Lister()
	if err := reconcile.WatchOf(b.ctrl, v1.FlowSchemas().Informer(), b.keysOf(flowSchemaKind)); err != nil {
		return nil, err
	}
	if err := reconcile.WatchOf(b.ctrl, v1.PriorityLevelConfigurations().Informer(), b.keysOf(priorityLevelKind)); err != nil {
		return nil, err
	}
	return b, nil
}

// keysOf maps an object the informers see to its key, if it is a bootstrap object.
func (b *bootstrapper) keysOf(k kind) func(metav1.Object) []configKey {
	return func(obj metav1.Object) []configKey {
		key := configKey{k, obj.GetName()}
		if _, ok := b.want[key]; !ok {
			return nil
		}
		return []configKey{key}
	}
}

// run keeps the bootstrap objects until ctx is done; done is marked once each of
// them has been brought into the API.
func (b *bootstrapper) run(ctx context.Context, done *health.PostStartHook) error {
	b.done = done
	for key := range b.want {
		b.ctrl.Add(key)
	}
	return b.ctrl.Run(ctx)
}

// ensured records that key was brought into the API, and marks the hook done once
// every bootstrap object was.
func (b *bootstrapper) ensured(key configKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen == nil {
		b.seen = map[configKey]bool{}
	}
	b.seen[key] = true
	if len(b.seen) == len(b.want) {
		b.done.Done()
	}
}

func (b *bootstrapper) reconcile(ctx context.Context, key configKey) (reconcile.Result, error) {
	w := b.want[key]
	var err error
	switch want := w.obj.(type) {
	case *flowcontrolv1.FlowSchema:
		err = ensure(ctx, b.flowSchemaLister.Get, b.flowSchemas, want, w.mandatory, func(dst, src *flowcontrolv1.FlowSchema) bool {
			changed := !equality.Semantic.DeepDerivative(src.Spec, dst.Spec)
			dst.Spec = src.Spec
			return changed
		})
	case *flowcontrolv1.PriorityLevelConfiguration:
		err = ensure(ctx, b.priorityLevelLister.Get, b.priorityLevels, want, w.mandatory, func(dst, src *flowcontrolv1.PriorityLevelConfiguration) bool {
			changed := !equality.Semantic.DeepDerivative(src.Spec, dst.Spec)
			dst.Spec = src.Spec
			return changed
		})
	}
	if err == nil {
		b.ensured(key)
	}
	return reconcile.Result{}, err
}

// objectClient is the part of a typed client ensure uses.
type objectClient[T metav1.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// deepCopier is a typed API object.
type deepCopier[T any] interface {
	metav1.Object
	DeepCopy() T
}

// ensure brings one bootstrap object into the API: created when missing; its spec
// set to want's when it is mandatory, or when its autoupdate-spec annotation allows
// (setSpec copies want's spec and reports whether it differed). get reads the
// informer's cache: a stale read ends in AlreadyExists (done) or a conflict (retried).
func ensure[T deepCopier[T]](ctx context.Context, get func(name string) (T, error), client objectClient[T], want T, mandatory bool, setSpec func(dst, src T) bool) error {
	cur, err := get(want.GetName())
	if apierrors.IsNotFound(err) {
		obj := want.DeepCopy()
		setAutoUpdate(obj)
		if _, err := client.Create(ctx, obj, metav1.CreateOptions{FieldManager: ProducerHook}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s: %w", want.GetName(), err)
		}
		klog.FromContext(ctx).V(2).Info("Created bootstrap configuration", "name", want.GetName(), "mandatory", mandatory)
		return nil
	}
	if err != nil {
		return err
	}
	if !mandatory && !autoUpdate(cur) {
		return nil
	}
	obj := cur.DeepCopy()
	changed := setSpec(obj, want)
	if !changed && obj.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey] == "true" {
		return nil
	}
	setAutoUpdate(obj)
	if _, err := client.Update(ctx, obj, metav1.UpdateOptions{FieldManager: ProducerHook}); err != nil {
		return fmt.Errorf("updating %s: %w", want.GetName(), err)
	}
	klog.FromContext(ctx).V(2).Info("Updated bootstrap configuration", "name", want.GetName(), "mandatory", mandatory)
	return nil
}

// autoUpdate reports whether a suggested object's spec is Concord's to keep: its
// annotation says "true", or it has none and was never changed since it was
// created (generation 1).
func autoUpdate(obj metav1.Object) bool {
	v, ok := obj.GetAnnotations()[flowcontrolv1.AutoUpdateAnnotationKey]
	if !ok {
		return obj.GetGeneration() == 1
	}
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// setAutoUpdate marks obj's spec as Concord's to keep.
func setAutoUpdate(obj metav1.Object) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[flowcontrolv1.AutoUpdateAnnotationKey] = "true"
	obj.SetAnnotations(a)
}
