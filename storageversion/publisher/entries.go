package publisher

import (
	"context"
	"slices"
	"time"

	"github.com/concordproject/concord/wire"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// publish writes the server's entry for gr into its StorageVersion (created if
// missing), unless it is there already. A conflict is retried by the runtime.
func (p *Publisher) publish(ctx context.Context, gr schema.GroupResource) error {
	_, lock := p.resource(gr)
	lock.Lock() // the latest report wins: read under the lock, written under it
	defer lock.Unlock()
	r, _ := p.resource(gr)
	svs := p.cfg.Client.InternalV1alpha1().StorageVersions()
	name := wire.StorageVersionName(gr)
	sv, err := svs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		sv, err = svs.Create(ctx, &apiserverinternalv1alpha1.StorageVersion{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	}
	if err != nil {
		return err
	}
	want := p.entry(r)
	entries := slices.DeleteFunc(slices.Clone(sv.Status.StorageVersions), func(e apiserverinternalv1alpha1.ServerStorageVersion) bool {
		return e.APIServerID == p.cfg.ServerID
	})
	if i := slices.IndexFunc(sv.Status.StorageVersions, func(e apiserverinternalv1alpha1.ServerStorageVersion) bool {
		return e.APIServerID == p.cfg.ServerID
	}); i >= 0 && equality.Semantic.DeepEqual(sv.Status.StorageVersions[i], want) {
		p.setPublished(gr, true)
		return nil
	}
	wire.SetStorageVersionEntries(sv, append(entries, want), time.Now())
	if _, err := svs.UpdateStatus(ctx, sv, metav1.UpdateOptions{}); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Storage version published", "storageVersion", name, "encodingVersion", want.EncodingVersion)
	p.setPublished(gr, true)
	return nil
}

func (p *Publisher) setPublished(gr schema.GroupResource, published bool) {
	p.mu.Lock()
	p.published[gr] = published
	p.mu.Unlock()
}

// withdraw removes the server's entries and deletes its lease; what fails is left to
// the aggregator's garbage collector, once the lease lapses.
func (p *Publisher) withdraw(ctx context.Context) {
	logger := klog.FromContext(ctx)
	svs := p.cfg.Client.InternalV1alpha1().StorageVersions()
	for _, r := range p.all() {
		p.setPublished(r.GroupResource, false)
		for attempt := 0; attempt < 3; attempt++ { // a few conflicts with peers' writes
			err := p.removeEntry(ctx, svs, wire.StorageVersionName(r.GroupResource))
			if err == nil || !apierrors.IsConflict(err) {
				if err != nil {
					logger.Error(err, "Cannot withdraw a storage version entry; the garbage collector will", "resource", r.GroupResource)
				}
				break
			}
		}
	}
	if err := p.lease.Release(ctx); err != nil {
		logger.Error(err, "Cannot delete the identity lease; it lapses by itself")
	}
}

// removeEntry removes the server's entry from StorageVersion name.
func (p *Publisher) removeEntry(ctx context.Context, svs interface {
	Get(context.Context, string, metav1.GetOptions) (*apiserverinternalv1alpha1.StorageVersion, error)
	UpdateStatus(context.Context, *apiserverinternalv1alpha1.StorageVersion, metav1.UpdateOptions) (*apiserverinternalv1alpha1.StorageVersion, error)
}, name string) error {
	sv, err := svs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	kept := slices.DeleteFunc(slices.Clone(sv.Status.StorageVersions), func(e apiserverinternalv1alpha1.ServerStorageVersion) bool {
		return e.APIServerID == p.cfg.ServerID
	})
	if len(kept) == len(sv.Status.StorageVersions) {
		return nil
	}
	wire.SetStorageVersionEntries(sv, kept, time.Now())
	_, err = svs.UpdateStatus(ctx, sv, metav1.UpdateOptions{})
	return err
}
