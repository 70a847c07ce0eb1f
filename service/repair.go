package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/storage"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
)

// RepairName names the repair controller in logs, metrics and its Events.
const RepairName = "service-ip-repair-controller"

// Defaults of the repair controller: how long a record without its Service is kept
// (a Service being created holds its IPAddress and node ports a moment before it is
// stored; kube-apiserver's request timeout), and how often the node port records are
// checked in full.
const (
	DefaultRepairGrace   = time.Minute
	DefaultRepairPeriod  = 3 * time.Minute
	recentGrace          = 5 * time.Second
	nodePortsKey         = "nodeports"
	serviceKeyPrefix     = "service/"
	ipAddressKeyPrefix   = "ipaddress/"
	reasonIPNotAllocated = "ClusterIPNotAllocated"
)

// RepairConfig is what the repair controller needs.
type RepairConfig struct {
	// Services is an informer of typed Services its owner runs.
	Services cache.SharedIndexInformer
	// Client writes IPAddresses and Events (through the server's API).
	Client kubernetes.Interface
	// Grace is how long an IPAddress or node port record whose Service does not hold
	// it is kept (DefaultRepairGrace if zero); Period how often every node port record
	// is checked (DefaultRepairPeriod if zero).
	Grace, Period time.Duration
	// Metrics receives the controller's samples.
	Metrics *reconcile.Metrics
}

// Repair is the repair controller of cluster IPs and node ports, kube-apiserver's
// IP and node port repair controllers in one: a Service's IPAddress or node port
// record that is missing is made again, one whose Service is gone or holds it no
// longer is removed after the grace period, and a cluster IP or node port that two
// Services hold is reported on them as a Warning Event. Meant to run elected: Run
// once per term.
type Repair struct {
	s        *Services
	cfg      RepairConfig
	services corev1listers.ServiceLister

	mu     sync.Mutex
	leaked map[int]time.Time // node ports seen without their Service, since
}

// NewRepair returns the repair controller of s's allocations.
func (s *Services) NewRepair(cfg RepairConfig) *Repair {
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultRepairGrace
	}
	if cfg.Period <= 0 {
		cfg.Period = DefaultRepairPeriod
	}
	return &Repair{s: s, cfg: cfg, services: corev1listers.NewServiceLister(cfg.Services.GetIndexer()), leaked: map[int]time.Time{}}
}

// Run repairs until ctx is done (the end of a leadership term).
func (r *Repair) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithName("service-repair"))
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: r.cfg.Client.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return err
	}
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, RepairName)
	ctrl := reconcile.New(RepairName, reconcile.Func[string](func(ctx context.Context, key string) (reconcile.Result, error) {
		return r.reconcile(ctx, recorder, key)
	}), reconcile.Options[string]{Workers: 2, Metrics: r.cfg.Metrics})
	handlers := []struct {
		inf     cache.SharedIndexInformer
		handler cache.ResourceEventHandler
	}{
		{r.cfg.Services, reconcile.HandlerOf(ctrl, func(svc *corev1.Service) []string {
			return []string{serviceKeyPrefix + svc.Namespace + "/" + svc.Name, nodePortsKey}
		})},
		{r.s.cfg.IPAddresses, reconcile.HandlerOf(ctrl, func(ip *networkingv1.IPAddress) []string {
			keys := []string{ipAddressKeyPrefix + ip.Name}
			if ref := ip.Spec.ParentRef; ref != nil && ref.Group == "" && ref.Resource == "services" {
				// Its Service's allocations again: a deleted IPAddress comes back.
				keys = append(keys, serviceKeyPrefix+ref.Namespace+"/"+ref.Name)
			}
			return keys
		})},
	}
	var synced []cache.InformerSynced
	for _, h := range handlers {
		reg, err := h.inf.AddEventHandler(h.handler)
		if err != nil {
			return err
		}
		defer func() { _ = h.inf.RemoveEventHandler(reg) }()
		synced = append(synced, reg.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil
	}
	return ctrl.Run(ctx)
}

// reconcile repairs what key names: a Service's allocations, an IPAddress, or every
// node port record.
func (r *Repair) reconcile(ctx context.Context, recorder events.EventRecorder, key string) (reconcile.Result, error) {
	switch {
	case key == nodePortsKey:
		return r.repairNodePorts(ctx, recorder)
	case strings.HasPrefix(key, serviceKeyPrefix):
		ns, name, _ := strings.Cut(strings.TrimPrefix(key, serviceKeyPrefix), "/")
		return reconcile.Result{}, r.repairService(ctx, recorder, ns, name)
	default:
		return r.repairIPAddress(ctx, recorder, strings.TrimPrefix(key, ipAddressKeyPrefix))
	}
}

// repairService makes the missing IPAddresses of a Service's cluster IPs again, and
// reports cluster IPs outside every range or held by another Service.
func (r *Repair) repairService(ctx context.Context, recorder events.EventRecorder, ns, name string) error {
	svc, err := r.services.Services(ns).Get(name)
	if err != nil || !needsClusterIP(svc) || isHeadless(svc) {
		return nil
	}
	for _, ip := range svc.Spec.ClusterIPs {
		addr, err := netip.ParseAddr(ip)
		if err != nil {
			recorder.Eventf(svc, nil, corev1.EventTypeWarning, "ClusterIPNotValid", "ClusterIPValidation", "Cluster IP %s is not a valid IP; please recreate Service", ip)
			continue
		}
		family := familyOf(addr)
		if !r.s.ips.contains(addr) {
			recorder.Eventf(svc, nil, corev1.EventTypeWarning, "ClusterIPOutOfRange", "ClusterIPAllocation", "Cluster IP [%v]: %s is not within any configured Service CIDR; please recreate service", family, ip)
			continue
		}
		cur, err := r.s.ips.addresses.Get(addr.String())
		if apierrors.IsNotFound(err) {
			// The informer of IPAddresses may be behind the Service's (the allocation
			// wrote the address first): only the server says it is missing.
			cur, err = r.cfg.Client.NetworkingV1().IPAddresses().Get(ctx, addr.String(), metav1.GetOptions{})
		}
		if (apierrors.IsNotFound(err) || (err == nil && !refersTo(cur, svc))) && !r.holdsLive(ctx, svc.Namespace, svc.Name, svc.UID, func(live *corev1.Service) bool {
			return slices.Contains(live.Spec.ClusterIPs, ip)
		}) {
			continue // the informer is behind: the Service gave the address up
		}
		switch {
		case apierrors.IsNotFound(err):
			recorder.Eventf(svc, nil, corev1.EventTypeWarning, reasonIPNotAllocated, "ClusterIPAllocation", "Cluster IP [%v]: %s is not allocated; repairing", family, ip)
			klog.FromContext(ctx).Info("Cluster IP not allocated; repairing", "service", klog.KObj(svc), "ip", ip)
			if _, err := r.cfg.Client.NetworkingV1().IPAddresses().Create(ctx, ipAddressFor(svc, addr), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		case err != nil:
			return err
		case refersTo(cur, svc):
		default:
			if other, err := r.holder(cur); err == nil && other != nil {
				recorder.Eventf(svc, nil, corev1.EventTypeWarning, "ClusterIPAlreadyAllocated", "ClusterIPAllocation", "Cluster IP [%v]:%s was assigned to multiple services; please recreate service", family, ip)
				continue
			}
			recorder.Eventf(svc, nil, corev1.EventTypeWarning, reasonIPNotAllocated, "ClusterIPAllocation", "the ClusterIP [%v]: %s for Service %s/%s has a wrong reference; repairing", family, ip, svc.Namespace, svc.Name)
			if err := r.recreate(ctx, cur, svc, addr); err != nil {
				return err
			}
		}
	}
	return nil
}

// holder returns the Service an IPAddress refers to, if it exists and holds the
// address.
func (r *Repair) holder(ip *networkingv1.IPAddress) (*corev1.Service, error) {
	ref := ip.Spec.ParentRef
	if ref == nil || ref.Group != "" || ref.Resource != "services" {
		return nil, nil
	}
	svc, err := r.services.Services(ref.Namespace).Get(ref.Name)
	if err != nil {
		return nil, err
	}
	for _, held := range svc.Spec.ClusterIPs {
		if held == ip.Name {
			return svc, nil
		}
	}
	return nil, nil
}

// recreate replaces an IPAddress by one that refers to svc.
func (r *Repair) recreate(ctx context.Context, cur *networkingv1.IPAddress, svc *corev1.Service, addr netip.Addr) error {
	client := r.cfg.Client.NetworkingV1().IPAddresses()
	if err := client.Delete(ctx, cur.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if _, err := client.Create(ctx, ipAddressFor(svc, addr), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// repairIPAddress removes an IPAddress of the allocator whose Service is gone, or does
// not hold it, once the grace period has passed.
func (r *Repair) repairIPAddress(ctx context.Context, recorder events.EventRecorder, name string) (reconcile.Result, error) {
	ip, err := r.s.ips.addresses.Get(name)
	if err != nil || ip.Labels[networkingv1.LabelManagedBy] != IPAllocatorName {
		return reconcile.Result{}, nil
	}
	age := time.Since(ip.CreationTimestamp.Time)
	ref := ip.Spec.ParentRef
	var reason, note string
	switch svc, err := r.holderOrMissing(ip); {
	case ref == nil || ref.Group != "" || ref.Resource != "services":
		reason, note = "IPAddressNotAllocated", fmt.Sprintf("IPAddress %s appears to have been modified, not referencing a Service %v: cleaning up", ip.Name, ref)
	case apierrors.IsNotFound(err):
		if age < r.cfg.Grace {
			return reconcile.Result{RequeueAfter: r.cfg.Grace - age}, nil
		}
		reason, note = "IPAddressNotAllocated", fmt.Sprintf("IPAddress: %s for Service %s/%s appears to have leaked: cleaning up", ip.Name, ref.Namespace, ref.Name)
	case err != nil:
		return reconcile.Result{}, err
	case svc != nil:
		return reconcile.Result{}, nil
	case age < r.cfg.Grace:
		// Being allocated by an update, or a creation that is being reverted.
		return reconcile.Result{RequeueAfter: max(r.cfg.Grace-age, recentGrace)}, nil
	default:
		reason, note = "IPAddressWrongReference", fmt.Sprintf("IPAddress: %s for Service %s/%s has a wrong reference; cleaning up", ip.Name, ref.Namespace, ref.Name)
	}
	if ref != nil && ref.Resource == "services" && r.holdsLive(ctx, ref.Namespace, ref.Name, "", func(svc *corev1.Service) bool {
		return slices.Contains(svc.Spec.ClusterIPs, ip.Name)
	}) {
		return reconcile.Result{}, nil // the informer is behind
	}
	recorder.Eventf(ip, nil, corev1.EventTypeWarning, reason, "IPAddressAllocation", "%s", note)
	klog.FromContext(ctx).Info("Removing an IPAddress", "ipaddress", ip.Name, "reason", reason)
	err = r.cfg.Client.NetworkingV1().IPAddresses().Delete(ctx, ip.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ip.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}

// holderOrMissing returns the Service ip refers to if it holds ip, nil if it exists
// and does not, or a NotFound error if it does not exist.
func (r *Repair) holderOrMissing(ip *networkingv1.IPAddress) (*corev1.Service, error) {
	ref := ip.Spec.ParentRef
	if ref == nil {
		return nil, nil
	}
	if _, err := r.services.Services(ref.Namespace).Get(ref.Name); err != nil {
		return nil, err
	}
	return r.holder(ip)
}

// repairNodePorts checks every node port record against the Services: a Service's
// missing record is written again, a port two Services hold is reported, a record no
// Service holds is removed once it has been so for the grace period.
func (r *Repair) repairNodePorts(ctx context.Context, recorder events.EventRecorder) (reconcile.Result, error) {
	recorded, err := r.s.ports.used(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	all, err := r.services.List(labels.Everything())
	if err != nil {
		return reconcile.Result{}, err
	}
	held := map[int]bool{}
	for _, svc := range all {
		for _, port := range nodePortsOf(svc) {
			if err := r.repairNodePort(ctx, recorder, svc, port, recorded, held); err != nil {
				return reconcile.Result{}, err
			}
			held[port] = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for port, rec := range recorded {
		if held[port] {
			delete(r.leaked, port)
			continue
		}
		since, seen := r.leaked[port]
		if !seen {
			r.leaked[port] = now
			continue
		}
		if now.Sub(since) < r.cfg.Grace || r.holdsLive(ctx, rec.owner.Namespace, rec.owner.Name, rec.owner.UID, func(svc *corev1.Service) bool {
			return slices.Contains(nodePortsOf(svc), port)
		}) {
			continue
		}
		klog.FromContext(ctx).Info("Removing a node port record no Service holds", "nodePort", port, "service", rec.owner.Namespace+"/"+rec.owner.Name)
		if _, err := r.s.ports.raw.Delete(ctx, portKey(port), rec.revision); err != nil {
			klog.FromContext(ctx).V(2).Info("Cannot remove a node port record", "nodePort", port, "err", err)
		}
		delete(r.leaked, port)
	}
	for port := range r.leaked {
		if _, ok := recorded[port]; !ok {
			delete(r.leaked, port)
		}
	}
	return reconcile.Result{RequeueAfter: min(r.cfg.Period, r.cfg.Grace)}, nil
}

// repairNodePort checks one node port of svc: outside the range, held by another
// Service too, or without its record (written again).
func (r *Repair) repairNodePort(ctx context.Context, recorder events.EventRecorder, svc *corev1.Service, port int, recorded map[int]recorded, held map[int]bool) error {
	rec, ok := recorded[port]
	if (!ok || rec.owner != ownerOf(svc)) && !r.holdsLive(ctx, svc.Namespace, svc.Name, svc.UID, func(live *corev1.Service) bool {
		return slices.Contains(nodePortsOf(live), port)
	}) {
		return nil // the informer is behind: the Service gave the port up
	}
	switch {
	case !r.s.ports.ports.Contains(port):
		recorder.Eventf(svc, nil, corev1.EventTypeWarning, "PortOutOfRange", "PortAllocation", "Port %d is not within the port range %s; please recreate service", port, r.s.ports.ports.String())
	case held[port] || (ok && rec.owner != ownerOf(svc) && r.ownerHolds(rec.owner, port)):
		recorder.Eventf(svc, nil, corev1.EventTypeWarning, "PortAlreadyAllocated", "PortAllocation", "Port %d was assigned to multiple services; please recreate service", port)
	case !ok:
		recorder.Eventf(svc, nil, corev1.EventTypeWarning, "PortNotAllocated", "PortAllocation", "Port %d is not allocated; repairing", port)
		klog.FromContext(ctx).Info("Node port not allocated; repairing", "service", klog.KObj(svc), "nodePort", port)
		if err := r.s.ports.reserve(ctx, svc, port, false); err != nil && !errors.Is(err, ErrPortAllocated) {
			return err
		}
	case rec.owner != ownerOf(svc):
		// Recorded for a Service that no longer holds it: svc's now.
		data, err := json.Marshal(ownerOf(svc))
		if err != nil {
			return err
		}
		if _, err := r.s.ports.raw.Update(ctx, portKey(port), data, rec.revision); err != nil && !errors.Is(err, storage.ErrConflict) {
			return err
		}
	}
	return nil
}

// ownerHolds reports whether the Service of a node port record exists and holds port.
func (r *Repair) ownerHolds(o portOwner, port int) bool {
	svc, err := r.services.Services(o.Namespace).Get(o.Name)
	if err != nil || svc.UID != o.UID {
		return false
	}
	for _, p := range nodePortsOf(svc) {
		if p == port {
			return true
		}
	}
	return false
}

// holdsLive reads Service namespace/name from the API (not the informer, which may be
// behind) and reports whether it exists (with that UID, unless empty) and holds what
// holds says: checked before a record is removed as leaked.
func (r *Repair) holdsLive(ctx context.Context, namespace, name string, uid types.UID, holds func(*corev1.Service) bool) bool {
	svc, err := r.cfg.Client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		// Not found: leaked. Another error: do not remove now; the next pass looks again.
		return !apierrors.IsNotFound(err)
	}
	return (uid == "" || svc.UID == uid) && holds(svc)
}
