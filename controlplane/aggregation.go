package controlplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/concordproject/concord/aggregator"
	"github.com/concordproject/concord/health"
	"github.com/concordproject/concord/identity"
	"github.com/concordproject/concord/lifecycle"
	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/server"
	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
)

// errAggregatorNotSynced: the aggregator's informers have not read the APIServices,
// Services and EndpointSlices yet.
var errAggregatorNotSynced = errors.New("the APIServices, Services and EndpointSlices have not been read yet")

// availabilityLease is the lease of the APIService availability controller's election.
const availabilityLease = "concord-apiservice-availability"

// The aggregator's post-start hooks, named as kube-apiserver's.
const (
	authenticationInfoHook  = "start-cluster-authentication-info-controller"
	aggregatorInformersHook = "start-kube-aggregator-informers"
	availabilityHook        = "apiservice-status-remote-available-controller"
)

var (
	servicesGR       = schema.GroupResource{Resource: "services"}
	endpointSlicesGR = schema.GroupResource{Group: discoveryv1.GroupName, Resource: "endpointslices"}
)

// aggregation is the aggregator of a server, its informers and hooks (nil when the
// server does not serve APIServices, Services and EndpointSlices in v1).
type aggregation struct {
	agg       *aggregator.Aggregator
	informers []cache.SharedIndexInformer
	hooks     []*health.PostStartHook
}

// newAggregation builds the aggregator (serving phase): its informers read the object
// store; started by startAggregation.
func (i *Instance) newAggregation() (*server.Aggregated, error) {
	for _, gr := range []schema.GroupResource{aggregator.GroupResource, servicesGR, endpointSlicesGR} {
		if res := i.Registry.Get(gr); res == nil || res.ServedVersion("v1") == nil {
			klog.Background().V(2).Info("Not an aggregator: a resource it reads is not served in v1", "resource", gr)
			return nil, nil
		}
	}
	apiServices := i.typedInformer(aggregator.GroupResource, func() runtime.Object { return &apiregistrationv1.APIService{} })
	services := i.typedInformer(servicesGR, func() runtime.Object { return &corev1.Service{} })
	slices := i.typedInformer(endpointSlicesGR, func() runtime.Object { return &discoveryv1.EndpointSlice{} })
	sv := i.parts.serving
	agg, err := aggregator.New(aggregator.Config{APIServices: apiServices, Services: services, EndpointSlices: slices,
		ProxyClientCert: sv.proxyCert, ProxyClientKey: sv.proxyKey})
	if err != nil {
		return nil, err
	}
	i.parts.aggregation = &aggregation{agg: agg, informers: []cache.SharedIndexInformer{apiServices, services, slices},
		hooks: []*health.PostStartHook{
			health.NewPostStartHook(authenticationInfoHook),
			health.NewPostStartHook(aggregatorInformersHook),
			health.NewPostStartHook(availabilityHook),
		}}
	return &server.Aggregated{Proxy: agg.Proxy, Discovery: agg.Discovery}, nil
}

// startAggregation publishes the request-header configuration aggregated servers
// read, starts the aggregator's informers, its discovery of the backends (every
// server) and the availability controller (elected among the servers).
func (i *Instance) startAggregation(ctx context.Context) error {
	ag := i.parts.aggregation
	if ag == nil {
		return nil
	}
	cfg := i.LoopbackConfig()
	cfg.QPS = -1
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	sv := i.parts.serving
	if err := aggregator.PublishAuthentication(ctx, client, aggregator.AuthenticationData(sv.clientCA, sv.frontProxyCA)); err != nil {
		return err
	}
	ag.hooks[0].Done()
	if err := i.start(ctx, informersComponent("aggregator-informers", errAggregatorNotSynced, ag.informers...)); err != nil {
		return err
	}
	ag.hooks[1].Done()
	if err := i.start(ctx, lifecycle.Component{Name: "apiservice-discovery", Run: func(ctx context.Context) error {
		return ag.agg.RunDiscovery(ctx, i.runtime)
	}}); err != nil {
		return err
	}
	return i.startAvailability(ctx, client, cfg)
}

// startAvailability starts the APIService availability controller, elected among the
// servers.
func (i *Instance) startAvailability(ctx context.Context, client kubernetes.Interface, cfg *rest.Config) error {
	ag := i.parts.aggregation
	apiClient, err := aggregatorclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := i.start(ctx, i.elected("apiservice-availability", availabilityLease, client, func(ctx context.Context) {
		if err := ag.agg.RunAvailability(ctx, apiClient.ApiregistrationV1(), i.runtime); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "The APIService availability controller stopped")
		}
	})); err != nil {
		return fmt.Errorf("starting the APIService availability controller: %w", err)
	}
	ag.hooks[2].Done()
	return nil
}

// storageVersionPublishers returns the groups whose StorageVersions user may write as
// an aggregated server (none before the aggregator is built, in the serving phase,
// before any request).
func (i *Instance) storageVersionPublishers(user string) []string {
	if ag := i.parts.aggregation; ag != nil {
		return ag.agg.PublisherGroups(user)
	}
	return nil
}

// elected is the component name that runs lead while this server leads the election
// over Lease kube-system/<lease> (client-go's, through reconcile.RunElected: lead runs
// once per term, its context ending with the term).
func (i *Instance) elected(name, lease string, client kubernetes.Interface, lead func(ctx context.Context)) lifecycle.Component {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: identity.Namespace, Name: lease},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: i.ServerID + "_" + uuid.NewString()},
	}
	election := reconcile.Election{Name: lease, Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	return lifecycle.Component{Name: name, Run: func(ctx context.Context) error {
		return reconcile.RunElected(ctx, election, lead)
	}}
}
