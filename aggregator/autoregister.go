package aggregator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/concordproject/concord/reconcile"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1client "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset/typed/apiregistration/v1"
)

// Labels and annotations of local APIServices.
const (
	// LabelAutoManaged marks an APIService the servers keep: "onstart" for a built-in
	// group-version, "true" for a CustomResourceDefinition's, as kube-aggregator's
	// auto-registration labels them. An APIService without it is left alone.
	LabelAutoManaged = "kube-aggregator.kubernetes.io/automanaged"
	// AnnotationServedBy lists (sorted, comma-separated) the IDs of the servers that
	// serve an auto-managed APIService's group-version. Concord's: a group-version one
	// release serves and another does not stays registered while any live server
	// serves it, and is removed once none does.
	AnnotationServedBy = "apiservice.concord.io/served-by"
)

// The values of LabelAutoManaged.
const (
	autoManagedOnStart = "onstart"
	autoManagedCRD     = "true"
)

// AutoregistrationName names the auto-registration controller in logs and metrics.
const AutoregistrationName = "autoregister"

// errPendingAPIServices: autoregister-completion's failure.
var errPendingAPIServices = errors.New("missing APIService")

// Priority is where an APIService's group and version come in discovery.
type Priority struct{ Group, Version int32 }

// crdPriority is the priority of a CustomResourceDefinition's group-version, as
// kube-apiserver gives it.
var crdPriority = Priority{Group: 1000, Version: 100}

// ownPriority is the priority of a built-in group-version Kubernetes does not know
// (Concord's own): below Kubernetes' groups, as its table's rule for a new group says.
var ownPriority = Priority{Group: 15600, Version: 9}

// builtinPriorities are kube-apiserver's group and version priorities of its
// built-in group-versions.
var builtinPriorities = map[schema.GroupVersion]Priority{
	{Group: "", Version: "v1"}:                                   {18000, 1},
	{Group: "events.k8s.io", Version: "v1"}:                      {17750, 15},
	{Group: "events.k8s.io", Version: "v1beta1"}:                 {17750, 5},
	{Group: "authentication.k8s.io", Version: "v1"}:              {17700, 15},
	{Group: "authentication.k8s.io", Version: "v1beta1"}:         {17700, 9},
	{Group: "authentication.k8s.io", Version: "v1alpha1"}:        {17700, 1},
	{Group: "authorization.k8s.io", Version: "v1"}:               {17600, 15},
	{Group: "certificates.k8s.io", Version: "v1"}:                {17300, 15},
	{Group: "certificates.k8s.io", Version: "v1beta1"}:           {17300, 9},
	{Group: "certificates.k8s.io", Version: "v1alpha1"}:          {17300, 1},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:          {17000, 15},
	{Group: "apiextensions.k8s.io", Version: "v1"}:               {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}:       {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1beta1"}:  {16700, 12},
	{Group: "admissionregistration.k8s.io", Version: "v1alpha1"}: {16700, 9},
	{Group: "coordination.k8s.io", Version: "v1"}:                {16500, 15},
	{Group: "coordination.k8s.io", Version: "v1beta1"}:           {16500, 13},
	{Group: "coordination.k8s.io", Version: "v1alpha2"}:          {16500, 12},
	{Group: "discovery.k8s.io", Version: "v1"}:                   {16200, 15},
	{Group: "discovery.k8s.io", Version: "v1beta1"}:              {16200, 12},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}:       {16100, 21},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta3"}:  {16100, 18},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta2"}:  {16100, 15},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1beta1"}:  {16100, 12},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1alpha1"}: {16100, 9},
	{Group: "internal.apiserver.k8s.io", Version: "v1alpha1"}:    {16000, 9},
	{Group: "storagemigration.k8s.io", Version: "v1"}:            {15800, 15},
	{Group: "storagemigration.k8s.io", Version: "v1beta1"}:       {15800, 9},
	{Group: "apps", Version: "v1"}:                               {17800, 15},
	{Group: "autoscaling", Version: "v1"}:                        {17500, 15},
	{Group: "autoscaling", Version: "v2"}:                        {17500, 30},
	{Group: "autoscaling", Version: "v2beta1"}:                   {17500, 9},
	{Group: "autoscaling", Version: "v2beta2"}:                   {17500, 1},
	{Group: "batch", Version: "v1"}:                              {17400, 15},
	{Group: "batch", Version: "v1beta1"}:                         {17400, 9},
	{Group: "batch", Version: "v2alpha1"}:                        {17400, 9},
	{Group: "networking.k8s.io", Version: "v1"}:                  {17200, 15},
	{Group: "networking.k8s.io", Version: "v1beta1"}:             {17200, 9},
	{Group: "policy", Version: "v1"}:                             {17100, 15},
	{Group: "policy", Version: "v1beta1"}:                        {17100, 9},
	{Group: "storage.k8s.io", Version: "v1"}:                     {16800, 15},
	{Group: "storage.k8s.io", Version: "v1beta1"}:                {16800, 9},
	{Group: "storage.k8s.io", Version: "v1alpha1"}:               {16800, 1},
	{Group: "scheduling.k8s.io", Version: "v1"}:                  {16600, 15},
	{Group: "scheduling.k8s.io", Version: "v1beta1"}:             {16600, 9},
	{Group: "scheduling.k8s.io", Version: "v1alpha3"}:            {16600, 3},
	{Group: "node.k8s.io", Version: "v1"}:                        {16300, 15},
	{Group: "node.k8s.io", Version: "v1alpha1"}:                  {16300, 1},
	{Group: "node.k8s.io", Version: "v1beta1"}:                   {16300, 9},
	{Group: "resource.k8s.io", Version: "v1"}:                    {16200, 21},
	{Group: "resource.k8s.io", Version: "v1beta2"}:               {16200, 15},
	{Group: "resource.k8s.io", Version: "v1beta1"}:               {16200, 9},
	{Group: "resource.k8s.io", Version: "v1alpha3"}:              {16200, 1},
	{Group: "lifecycle.k8s.io", Version: "v1alpha1"}:             {15700, 1},
}

// APIServiceName is the name of the APIService of gv: <version>.<group>.
func APIServiceName(gv schema.GroupVersion) string { return gv.Version + "." + gv.Group }

// groupVersionOf is the inverse of APIServiceName.
func groupVersionOf(name string) schema.GroupVersion {
	version, group, _ := strings.Cut(name, ".")
	return schema.GroupVersion{Group: group, Version: version}
}

// ServedGroupVersion is a group-version a server serves itself.
type ServedGroupVersion struct {
	schema.GroupVersion
	// CRD is true for a CustomResourceDefinition's group-version.
	CRD bool
}

// AutoregistrationConfig is what Autoregistration needs.
type AutoregistrationConfig struct {
	// ServerID names this server in AnnotationServedBy.
	ServerID string
	// Served returns the group-versions the server serves now (apiregistration.k8s.io
	// excluded: as in Kubernetes, the aggregator's own group has no APIService).
	Served func() []ServedGroupVersion
	// Live reports whether the server of an ID still runs (its identity lease
	// stands); nil when servers have no identity leases: then only a server itself
	// takes its ID out of AnnotationServedBy.
	Live func(id string) bool
	// Client writes APIServices.
	Client apiregistrationv1client.APIServicesGetter
	// Metrics receives the controller's samples.
	Metrics *reconcile.Metrics
}

// Autoregistration keeps the local APIServices, as kube-aggregator's
// auto-registration does: an APIService (spec.service nil, kube-apiserver's
// priorities, LabelAutoManaged) for every group-version the server serves, created at
// start and as CustomResourceDefinitions come, its ID in AnnotationServedBy; a
// group-version it no longer serves loses its ID there, and the APIService is deleted
// once no live server serves it. Every server runs one. APIServices registered to a
// backend, and local ones without LabelAutoManaged, are left alone.
type Autoregistration struct {
	agg  *Aggregator
	cfg  AutoregistrationConfig
	ctrl *reconcile.Controller[string]

	started atomic.Bool
	mu      sync.Mutex
	pending sets.Set[string] // the served group-versions at start not yet seen Available
	initial sets.Set[string] // those not yet reconciled once (nil before Run)
}

// NewAutoregistration returns the auto-registration controller of a's APIServices.
func (a *Aggregator) NewAutoregistration(cfg AutoregistrationConfig) (*Autoregistration, error) {
	r := &Autoregistration{agg: a, cfg: cfg}
	r.ctrl = reconcile.New(AutoregistrationName, reconcile.Func[string](func(ctx context.Context, name string) (reconcile.Result, error) {
		res, err := r.reconcile(ctx, name)
		if err == nil {
			r.reconciled(name)
		}
		return res, err
	}), reconcile.Options[string]{Workers: 4, Metrics: cfg.Metrics})
	if err := reconcile.WatchOf(r.ctrl, a.cfg.APIServices, apiServiceName); err != nil {
		return nil, err
	}
	return r, nil
}

// Run registers the served group-versions (Started is true once each has been
// reconciled once), then keeps the APIServices until ctx is done.
func (r *Autoregistration) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName(AutoregistrationName))
	if !r.ctrl.WaitForSync(ctx) {
		return nil
	}
	pending := sets.New[string]()
	for _, gv := range r.cfg.Served() {
		pending.Insert(APIServiceName(gv.GroupVersion))
	}
	r.mu.Lock()
	r.pending, r.initial = pending, pending.Clone()
	r.started.Store(pending.Len() == 0)
	r.mu.Unlock()
	r.Resync()
	return r.ctrl.Run(ctx)
}

// reconciled notes that name has been reconciled once.
func (r *Autoregistration) reconciled(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.initial != nil {
		r.initial.Delete(name)
		if r.initial.Len() == 0 {
			r.started.Store(true)
		}
	}
}

// Started reports whether every group-version served at start has been reconciled
// once (its APIService written).
func (r *Autoregistration) Started() bool { return r.started.Load() }

// Resync queues every served group-version and every auto-managed APIService: call it
// when what the server serves changes, or when a server stops or its lease lapses.
func (r *Autoregistration) Resync() {
	for _, gv := range r.cfg.Served() {
		r.ctrl.Add(APIServiceName(gv.GroupVersion))
	}
	all, err := r.agg.apiServices.List(labels.Everything())
	if err != nil {
		return
	}
	for _, s := range all {
		if isAutoManaged(s) {
			r.ctrl.Add(s.Name)
		}
	}
}

// Completion is the autoregister-completion check: it fails, naming them, until every
// group-version the server served when it started has been seen with an APIService
// that is Available, and passes from then on (kube-aggregator's boot sequence check).
func (r *Autoregistration) Completion(*http.Request) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started.Load() {
		return fmt.Errorf("%w: the auto-registration has not started", errPendingAPIServices)
	}
	for name := range r.pending {
		if svc, err := r.agg.apiServices.Get(name); err == nil {
			if ok, _ := available(svc); ok {
				r.pending.Delete(name)
			}
		}
	}
	if r.pending.Len() > 0 {
		return fmt.Errorf("%w: %v", errPendingAPIServices, sets.List(r.pending))
	}
	return nil
}

// reconcile brings APIService name in line with whether this server serves its
// group-version.
func (r *Autoregistration) reconcile(ctx context.Context, name string) (reconcile.Result, error) {
	gv := groupVersionOf(name)
	var served *ServedGroupVersion
	for _, s := range r.cfg.Served() {
		if s.GroupVersion == gv {
			served = &s
			break
		}
	}
	cur, err := r.agg.apiServices.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	if err != nil {
		cur = nil
	}
	switch {
	case cur == nil && served == nil:
		return reconcile.Result{}, nil
	case cur == nil:
		_, err := r.cfg.Client.APIServices().Create(ctx, r.desired(*served, []string{r.cfg.ServerID}), metav1.CreateOptions{FieldManager: AutoregistrationName})
		if apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, nil // its event queues it again
		}
		if err == nil {
			klog.FromContext(ctx).V(2).Info("Registered a local APIService", "apiservice", name)
		}
		return reconcile.Result{}, err
	case cur.Spec.Service != nil || !isAutoManaged(cur):
		return reconcile.Result{}, nil // not ours
	case served != nil:
		return reconcile.Result{}, r.update(ctx, cur, r.desired(*served, append(r.liveServers(cur), r.cfg.ServerID)))
	}
	others := slices.DeleteFunc(r.liveServers(cur), func(id string) bool { return id == r.cfg.ServerID })
	if len(others) > 0 {
		next := cur.DeepCopy()
		next.Annotations[AnnotationServedBy] = joinIDs(others)
		return reconcile.Result{}, r.update(ctx, cur, next)
	}
	err = r.cfg.Client.APIServices().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion}})
	if err == nil {
		klog.FromContext(ctx).V(2).Info("Removed a local APIService no server serves", "apiservice", name)
	}
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}

// update writes next over cur if the spec, the label or the annotation differ.
func (r *Autoregistration) update(ctx context.Context, cur, next *apiregistrationv1.APIService) error {
	if apiequality.Semantic.DeepEqual(cur.Spec, next.Spec) && cur.Labels[LabelAutoManaged] == next.Labels[LabelAutoManaged] &&
		cur.Annotations[AnnotationServedBy] == next.Annotations[AnnotationServedBy] {
		return nil
	}
	out := cur.DeepCopy()
	out.Spec = next.Spec
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Labels[LabelAutoManaged] = next.Labels[LabelAutoManaged]
	out.Annotations[AnnotationServedBy] = next.Annotations[AnnotationServedBy]
	_, err := r.cfg.Client.APIServices().Update(ctx, out, metav1.UpdateOptions{FieldManager: AutoregistrationName})
	if apierrors.IsNotFound(err) {
		return nil // its event queues it again
	}
	return err
}

// desired is the local APIService of gv, served by servers.
func (r *Autoregistration) desired(gv ServedGroupVersion, servers []string) *apiregistrationv1.APIService {
	p, managed := crdPriority, autoManagedCRD
	if !gv.CRD {
		managed = autoManagedOnStart
		var ok bool
		if p, ok = builtinPriorities[gv.GroupVersion]; !ok {
			p = ownPriority
		}
	}
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{
			Name:        APIServiceName(gv.GroupVersion),
			Labels:      map[string]string{LabelAutoManaged: managed},
			Annotations: map[string]string{AnnotationServedBy: joinIDs(servers)},
		},
		Spec: apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version, GroupPriorityMinimum: p.Group, VersionPriority: p.Version},
	}
}

// liveServers returns the IDs of cur's AnnotationServedBy whose servers still run.
func (r *Autoregistration) liveServers(cur *apiregistrationv1.APIService) []string {
	var out []string
	for _, id := range strings.Split(cur.Annotations[AnnotationServedBy], ",") {
		if id = strings.TrimSpace(id); id != "" && (id == r.cfg.ServerID || r.cfg.Live == nil || r.cfg.Live(id)) {
			out = append(out, id)
		}
	}
	return out
}

// joinIDs is AnnotationServedBy's value of ids: sorted, each once.
func joinIDs(ids []string) string {
	return strings.Join(sets.List(sets.New(ids...)), ",")
}

// isAutoManaged reports whether the servers keep svc.
func isAutoManaged(svc *apiregistrationv1.APIService) bool {
	v := svc.Labels[LabelAutoManaged]
	return v == autoManagedOnStart || v == autoManagedCRD
}
