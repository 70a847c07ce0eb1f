package quota

import (
	"context"
	"errors"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	resourcequotaapi "k8s.io/apiserver/pkg/admission/plugin/resourcequota/apis/resourcequota"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ErrNotSynced means the admission has not read the quotas yet.
var ErrNotSynced = errors.New("the resource quotas have not been read yet")

// Admission refuses writes that would exceed a namespace's ResourceQuotas and
// charges the quotas for those it admits: k8s.io/apiserver's ResourceQuota admission
// plugin, fed by an informer of this server's quotas and writing their status.used
// through this server. Every server runs one; Run starts it.
type Admission struct {
	plugin  *resourcequota.QuotaAdmission
	factory informers.SharedInformerFactory
	stop    chan struct{}
}

var _ admission.ValidationInterface = (*Admission)(nil)

// NewAdmission returns the quota admission of the server restConfig reaches with
// its loopback identity.
func NewAdmission(restConfig *rest.Config) (*Admission, error) {
	cfg := rest.CopyConfig(restConfig)
	cfg.QPS = -1 // the loopback identity is exempt from priority and fairness too
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	plugin, err := resourcequota.NewResourceQuota(&resourcequotaapi.Configuration{}, evaluatorWorkers)
	if err != nil {
		return nil, err
	}
	a := &Admission{plugin: plugin, factory: informers.NewSharedInformerFactory(client, 0), stop: make(chan struct{})}
	plugin.SetDrainedNotification(a.stop)
	plugin.SetExternalKubeClientSet(client)
	plugin.SetExternalKubeInformerFactory(a.factory)
	// Admission counts objects of the resource a request writes; the usage
	// controller lists them, so these evaluators have no lister.
	plugin.SetQuotaConfiguration(generic.NewConfiguration(append(objectCountEvaluators(nil), servicesEvaluator{}), IgnoredResources))
	if err := plugin.ValidateInitialization(); err != nil {
		return nil, err
	}
	return a, nil
}

// evaluatorWorkers is how many namespaces the plugin evaluates at once
// (kube-apiserver's number).
const evaluatorWorkers = 5

// Handles reports whether the admission acts on op: creations and updates.
func (a *Admission) Handles(op admission.Operation) bool { return a.plugin.Handles(op) }

// Validate admits attrs, or refuses it with a Forbidden StatusError naming the quota
// it would exceed; an admitted write's usage is charged to the quotas first.
func (a *Admission) Validate(ctx context.Context, attrs admission.Attributes, o admission.ObjectInterfaces) error {
	return a.plugin.Validate(ctx, attrs, o)
}

// Run reads the quotas until ctx is done, and returns once the informer has stopped.
// Until the informer has synced, the plugin looks quotas up through the API.
func (a *Admission) Run(ctx context.Context) error {
	defer close(a.stop)
	a.factory.Start(ctx.Done())
	defer a.factory.Shutdown()
	<-ctx.Done()
	return nil
}

// Ready reports nil once the quotas have been read.
func (a *Admission) Ready() error {
	if !a.factory.Core().V1().ResourceQuotas().Informer().HasSynced() {
		return ErrNotSynced
	}
	return nil
}
