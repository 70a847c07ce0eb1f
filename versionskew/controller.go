package versionskew

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/wire"
	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
)

// ControllerName names the controller in logs, metrics and Events.
const ControllerName = "version-skew-controller"

// The reasons of the controller's Events, on the identity Lease of the component.
const (
	EventOutOfAllowance      = "VersionSkewOutOfAllowance"
	EventWithinAllowance     = "VersionSkewWithinAllowance"
	eventAction              = "CheckVersionSkew"
	leaseNamespace           = metav1.NamespaceSystem
	componentsMetric         = "version_skew_components"
	outOfAllowanceMetric     = "version_skew_out_of_allowance"
	metricsNamespace         = "concord"
	outOfAllowanceMetricHelp = "1 for each component (by identity lease) outside the version skew KEP-4330 allows; exported by the server leading the version skew controller."
)

// ErrInvalidConfig wraps every problem of a Config.
var ErrInvalidConfig = errors.New("invalid version skew controller configuration")

// Config configures a Controller.
type Config struct {
	// Leases informs of coordination.k8s.io/v1 Leases (typed), kube-system's at least.
	Leases cache.SharedIndexInformer
	// Client reads and writes the VersionSkew object: a REST client whose requests name
	// their absolute paths (any group-version) and whose errors decode as Status.
	Client rest.Interface
	// Recorder emits the Events.
	Recorder events.EventRecorder
	// Metrics receives the gauges; ReconcileMetrics the controller's samples (either
	// nil: not exported).
	Metrics          prometheus.Registerer
	ReconcileMetrics *reconcile.Metrics
}

// Controller compares the versions every component announces on its identity lease
// and reports what is outside the allowance: in the VersionSkew object's status, as
// Events on the leases, and in gauges. Meant to run elected (Run is called again for
// each term).
type Controller struct {
	cfg            Config
	components     prometheus.Gauge
	outOfAllowance *prometheus.GaugeVec

	mu      sync.Mutex
	outside map[string]bool // components reported outside this term
}

// New checks cfg and registers the gauges.
func New(cfg Config) (*Controller, error) {
	if cfg.Leases == nil || cfg.Client == nil || cfg.Recorder == nil {
		return nil, fmt.Errorf("%w: a lease informer, a client and a recorder are required", ErrInvalidConfig)
	}
	c := &Controller{cfg: cfg,
		components: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: componentsMetric,
			Help: "Components (API servers, aggregated API servers, controller managers) whose live identity leases announce their versions; exported by the server leading the version skew controller."}),
		outOfAllowance: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: metricsNamespace, Name: outOfAllowanceMetric,
			Help: outOfAllowanceMetricHelp}, []string{"component", "kind", "role", "emulation"}),
	}
	if cfg.Metrics != nil {
		for _, col := range []prometheus.Collector{c.components, c.outOfAllowance} {
			if err := cfg.Metrics.Register(col); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// Run keeps the report until ctx is done: after every change of an identity lease.
func (c *Controller) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName(ControllerName))
	c.mu.Lock()
	c.outside = map[string]bool{}
	c.mu.Unlock()
	defer func() { // another server reports from now on
		c.components.Set(0)
		c.outOfAllowance.Reset()
	}()
	ctrl := reconcile.New(ControllerName, reconcile.Func[struct{}](c.reconcile), reconcile.Options[struct{}]{Metrics: c.cfg.ReconcileMetrics})
	reg, err := c.cfg.Leases.AddEventHandler(reconcile.HandlerOf(ctrl, identityLeases))
	if err != nil {
		return fmt.Errorf("following leases: %w", err)
	}
	defer func() { _ = c.cfg.Leases.RemoveEventHandler(reg) }()
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return nil
	}
	ctrl.Add(struct{}{})
	return ctrl.Run(ctx)
}

// reconcile compares the live components and reports.
func (c *Controller) reconcile(ctx context.Context, _ struct{}) (reconcile.Result, error) {
	components, leases := c.live(ctx)
	violations := Check(components)
	status := statusOf(components, violations)
	c.export(components, violations)
	c.notify(components, leases, violations)
	if err := c.write(ctx, status); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// live returns the components whose identity leases exist and announce their
// versions, sorted by name, and their leases. A component is live while its lease
// exists, not while this server's clock says the lease has not expired: an expired
// lease is deleted by the elected identity lease collector (package storageversion),
// whose word every server's view follows (the kubernetes Service's endpoints too),
// so that a component whose lease lapses for a moment (cut off from etcd, then
// renewing) is not dropped from the report and put back.
func (c *Controller) live(ctx context.Context) ([]Component, map[string]*coordinationv1.Lease) {
	var out []Component
	leases := map[string]*coordinationv1.Lease{}
	for _, obj := range c.cfg.Leases.GetStore().List() {
		l, ok := obj.(*coordinationv1.Lease)
		if !ok || l.Namespace != leaseNamespace {
			continue
		}
		comp, ok := componentOf(ctx, l)
		if !ok {
			continue
		}
		out = append(out, comp)
		leases[comp.Name] = l
	}
	slices.SortFunc(out, func(a, b Component) int { return strings.Compare(a.Name, b.Name) })
	return out, leases
}

// identityLeases is the controller's keys function: its one key for an identity
// lease, none for the others (leader election leases renew every few seconds and
// change nothing the controller reports).
func identityLeases(l *coordinationv1.Lease) []struct{} {
	if l.Namespace != leaseNamespace || (l.Labels[wire.LabelAPIServerIdentity] == "" && l.Labels[wire.LabelControllerIdentity] == "") {
		return nil
	}
	return []struct{}{{}}
}

// componentOf reads a component from its identity lease; ok is false for leases that
// are not identity leases or announce no versions.
func componentOf(ctx context.Context, l *coordinationv1.Lease) (Component, bool) {
	kind, role := l.Labels[wire.LabelAPIServerIdentity], APIServer
	if kind == "" {
		kind, role = l.Labels[wire.LabelControllerIdentity], ControllerManager
	}
	if kind == "" {
		return Component{}, false
	}
	v, ok, err := wire.ComponentVersionsOf(l.Labels)
	if err != nil {
		klog.FromContext(ctx).Info("Ignoring an identity lease with an invalid version label", "lease", klog.KObj(l), "err", err)
		return Component{}, false
	}
	return Component{Name: l.Name, Kind: kind, Role: role, ComponentVersions: v}, ok
}

// statusOf is the status that reports components and violations.
func statusOf(components []Component, violations []Violation) Status {
	outside := Outside(violations)
	var s Status
	for _, comp := range components {
		s.Components = append(s.Components, ComponentStatus{Name: comp.Name, Kind: comp.Kind, Role: comp.Role,
			BinaryVersion: mm(comp.Binary), EmulationVersion: mm(comp.Emulation), MinCompatibilityVersion: mm(comp.MinCompatibility),
			WithinAllowance: !outside[comp.Name]})
	}
	cond := metav1.Condition{Type: ConditionWithinAllowance, Status: metav1.ConditionTrue, Reason: ReasonWithinAllowance,
		Message: fmt.Sprintf("the %d components are within the version skew KEP-4330 allows", len(components))}
	if len(violations) > 0 {
		msgs := make([]string, len(violations))
		for i, v := range violations {
			msgs[i] = v.Message
		}
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonOutOfAllowance, strings.Join(msgs, "; ")
	}
	s.Conditions = []metav1.Condition{cond}
	return s
}

// export sets the gauges.
func (c *Controller) export(components []Component, violations []Violation) {
	outside := Outside(violations)
	c.components.Set(float64(len(components)))
	c.outOfAllowance.Reset()
	for _, comp := range components {
		if outside[comp.Name] {
			c.outOfAllowance.WithLabelValues(comp.Name, comp.Kind, string(comp.Role), mm(comp.Emulation)).Set(1)
		}
	}
}

// notify emits an Event on the lease of each component that has just left the
// allowance (Warning, with every rule it breaks) or come back within it (Normal).
func (c *Controller) notify(components []Component, leases map[string]*coordinationv1.Lease, violations []Violation) {
	messages := map[string][]string{}
	for _, v := range violations {
		messages[v.Component] = append(messages[v.Component], v.Message)
		if v.Mutual {
			messages[v.Peer] = append(messages[v.Peer], v.Message)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, comp := range components {
		lease, msgs, was := leases[comp.Name], messages[comp.Name], c.outside[comp.Name]
		switch {
		case len(msgs) > 0 && !was:
			c.cfg.Recorder.Eventf(lease, nil, "Warning", EventOutOfAllowance, eventAction, "%s", strings.Join(msgs, "; "))
			c.outside[comp.Name] = true
		case len(msgs) == 0 && was:
			c.cfg.Recorder.Eventf(lease, nil, "Normal", EventWithinAllowance, eventAction, "%s is within the version skew allowance again", comp)
			delete(c.outside, comp.Name)
		}
	}
	for name := range c.outside {
		if leases[name] == nil { // gone: nothing to say on
			delete(c.outside, name)
		}
	}
}

// write makes the VersionSkew object's status say status (created if missing; not
// written when unchanged; a condition keeps its transition time while its status
// stays).
func (c *Controller) write(ctx context.Context, status Status) error {
	cur, err := c.do(ctx, http.MethodGet, objectPath, nil)
	if apierrors.IsNotFound(err) {
		cur, err = c.do(ctx, http.MethodPost, collectionPath, &VersionSkew{ObjectMeta: metav1.ObjectMeta{Name: Name}})
	}
	if err != nil {
		return err
	}
	next := cur.DeepCopyStatus()
	next.Components = status.Components
	for _, cond := range status.Conditions {
		meta.SetStatusCondition(&next.Conditions, cond)
	}
	if apiequality.Semantic.DeepEqual(next, cur.Status) {
		return nil
	}
	cur.Status = next
	_, err = c.do(ctx, http.MethodPut, objectPath+"/status", cur)
	return err
}

// The paths of the VersionSkew API.
var (
	collectionPath = "/apis/" + GroupVersion.String() + "/" + GroupResource.Resource
	objectPath     = collectionPath + "/" + Name
)

// do sends one request of the VersionSkew API (a write carries body) and reads the
// object answered. It is not retried by the client: a server that says "retry later"
// (429 with Retry-After, as its storage-version barrier answers while it publishes)
// returns the error to the reconcile runtime, which requeues with its back-off and
// composes the report again from the leases of then. A client retry would send, after
// the wait, the report of before it, which later events may have made stale: written,
// it would be put right by the next reconcile, one write too many.
func (c *Controller) do(ctx context.Context, verb, path string, body *VersionSkew) (*VersionSkew, error) {
	req := c.cfg.Client.Verb(verb).AbsPath(path).MaxRetries(0)
	if body != nil {
		body.APIVersion, body.Kind = GroupVersion.String(), "VersionSkew"
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		req = req.Param("fieldManager", ControllerName).Body(data)
	}
	raw, err := req.Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var out VersionSkew
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("reading %s: %w", Name, err)
	}
	return &out, nil
}
