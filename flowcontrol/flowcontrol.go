package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/reconcile"
	"k8s.io/apiserver/pkg/storage"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fcmetrics "k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Post-start hooks, named as kube-apiserver names its own.
const (
	// ConsumerHook is done once the configuration has been read.
	ConsumerHook = "priority-and-fairness-config-consumer"
	// ProducerHook is done once the bootstrap configuration is in the API.
	ProducerHook = "priority-and-fairness-config-producer"
)

// ErrNoConcurrency is returned by New for a concurrency limit below 1.
var ErrNoConcurrency = errors.New("the concurrency limit must be at least 1")

// Config configures a Controller.
type Config struct {
	// RESTConfig reaches this server with its loopback identity (system:masters, so
	// exempt): the configuration is read and written through it.
	RESTConfig *rest.Config
	// ConcurrencyLimit is how many seats the priority levels share (kube-apiserver:
	// --max-requests-inflight plus --max-mutating-requests-inflight).
	ConcurrencyLimit int
	// ReconcileMetrics records the bootstrap controller's reconciles.
	ReconcileMetrics *reconcile.Metrics
}

// Controller is API priority and fairness for one server: the filter, the
// configuration it follows and the bootstrap of that configuration.
type Controller struct {
	apf       utilflowcontrol.Interface
	writes    *statusWrites
	factory   informers.SharedInformerFactory
	estimate  fcrequest.WorkEstimatorFunc
	bootstrap *bootstrapper
	consumer  *health.PostStartHook
	producer  *health.PostStartHook
}

// New returns a Controller; Run starts it. Until it has read the configuration,
// requests are classified by the mandatory objects alone (exempt and catch-all).
func New(cfg Config) (*Controller, error) {
	if cfg.ConcurrencyLimit < 1 {
		return nil, fmt.Errorf("%w, not %d", ErrNoConcurrency, cfg.ConcurrencyLimit)
	}
	restConfig := rest.CopyConfig(cfg.RESTConfig)
	restConfig.QPS = -1 // the loopback identity is exempt: no client-side limit either
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	fcmetrics.Register()
	factory := informers.NewSharedInformerFactory(client, 0)
	writes := &statusWrites{FlowcontrolV1Interface: client.FlowcontrolV1()}
	apf := utilflowcontrol.New(factory, writes, cfg.ConcurrencyLimit)
	c := &Controller{
		apf:      apf,
		writes:   writes,
		factory:  factory,
		estimate: fcrequest.NewWorkEstimator(unknownObjectCount, apf.GetInterestedWatchCount, fcrequest.DefaultWorkEstimatorConfig(), apf.GetMaxSeats),
		consumer: health.NewPostStartHook(ConsumerHook),
		producer: health.NewPostStartHook(ProducerHook),
	}
	c.bootstrap, err = newBootstrapper(client.FlowcontrolV1(), factory, cfg.ReconcileMetrics)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Checks are the post-start hooks for the server's health checks: the configuration
// read, and the bootstrap configuration written.
func (c *Controller) Checks() []health.Checker { return []health.Checker{c.consumer, c.producer} }

// Run follows the configuration and keeps the bootstrap objects until ctx is done,
// and returns once its informers and workers have stopped.
func (c *Controller) Run(ctx context.Context) error {
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		// Run returns an error only when ctx is done before the first sync.
		_ = c.apf.Run(ctx.Done())
		// Its config worker is not joined: let it finish the pass it is in, while
		// this server still serves.
		c.writes.waitIdle(context.WithoutCancel(ctx), 2*time.Second)
	})
	wg.Go(func() {
		for _, synced := range c.factory.WaitForCacheSync(ctx.Done()) {
			if !synced {
				return
			}
		}
		c.consumer.Done()
	})
	return c.bootstrap.run(ctx, c.producer)
}

// Ready reports nil once the configuration has been read and the bootstrap
// configuration written once.
func (c *Controller) Ready() error {
	for _, hook := range []*health.PostStartHook{c.consumer, c.producer} {
		if err := hook.Check(nil); err != nil {
			return err
		}
	}
	return nil
}

// unknownObjectCount is the work estimator's object counter: Concord does not count
// each resource's objects yet, and the estimator charges lists of a resource it has
// no count for the minimum of seats.
func unknownObjectCount(string) (storage.Stats, error) {
	return storage.Stats{}, fcrequest.ObjectCountNotFoundErr
}
