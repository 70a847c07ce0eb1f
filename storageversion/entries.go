package storageversion

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/concordproject/concord/reconcile"
	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/wire"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

func (m *Manager) reconcile(ctx context.Context, gr schema.GroupResource) (reconcile.Result, error) {
	return reconcile.Result{}, m.sync(ctx, gr)
}

// sync makes the stored entry of gr what this server reports: its desired entry when
// it tracks gr, none otherwise.
func (m *Manager) sync(ctx context.Context, gr schema.GroupResource) error {
	lock := m.lockFor(gr)
	lock.Lock()
	defer lock.Unlock()
	m.mu.RLock()
	t, stopping := m.tracked[gr], m.stopping
	m.mu.RUnlock()
	if stopping {
		return nil
	}
	logger := klog.FromContext(ctx)
	if t == nil {
		return m.withdraw(ctx, gr)
	}
	rv, err := m.write(ctx, t.name, *t.desired.Load(), m.keysOf(gr), t.owner.Load())
	if err == nil && m.cfg.Mirror != nil {
		err = m.cfg.Mirror(ctx, gr, *t.desired.Load())
	}
	m.attempted(t, err)
	if err != nil {
		t.gate.fail(err)
		if ctx.Err() == nil {
			logger.Error(err, "Cannot register the storage version: writes to the resource stay refused until it is", "resource", gr, "storageVersion", t.name)
		}
		return err
	}
	t.verifiedRV.Store(rv)
	if !t.gate.isOpen() {
		logger.V(2).Info("Storage version registered", "resource", gr, "entry", fmtEntry(t.desired.Load()), "writeKey", m.keysOf(gr).Write)
	}
	t.gate.setOpen()
	return nil
}

// withdraw removes this server's entry for a resource it no longer serves, and the
// object itself if it belongs to a CustomResourceDefinition that is gone.
func (m *Manager) withdraw(ctx context.Context, gr schema.GroupResource) error {
	name := wire.StorageVersionName(gr)
	removed, deleted, err := m.objs.removeEntries(ctx, name, m.isSelf)
	if err != nil {
		return err
	}
	orphan := false
	if !deleted {
		if orphan, err = m.objs.deleteIfOrphan(ctx, name); err != nil {
			return err
		}
	}
	if removed > 0 || orphan {
		klog.FromContext(ctx).V(2).Info("Storage version entry withdrawn: the server no longer serves the resource", "resource", gr,
			"storageVersion", name, "objectDeleted", deleted || orphan)
	}
	return nil
}

func (m *Manager) isSelf(id string) (bool, error) { return id == m.cfg.ServerID, nil }

// attempted records the outcome of a registration for the start-up bookkeeping: the
// first round, the post-start hook and the registration-time metric.
func (m *Manager) attempted(t *tracked, err error) {
	if t.custom {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !t.attempted {
		t.attempted = true
		m.firstPending--
		if m.firstPending == 0 {
			close(m.firstRound)
		}
	}
	if _, failing := m.builtinFailing[t.gr]; !failing {
		return
	}
	if err == nil {
		delete(m.builtinFailing, t.gr)
		if len(m.builtinFailing) == 0 {
			m.metrics.registration.Set(time.Since(m.cfg.Started).Seconds())
			m.hook.Done()
		}
		return
	}
	m.builtinFailing[t.gr] = err
	var msgs []string
	for gr, e := range m.builtinFailing {
		if e != nil {
			msgs = append(msgs, fmt.Sprintf("%s: %v", wire.StorageVersionName(gr), e))
		}
	}
	slices.Sort(msgs)
	m.hook.Fail(errors.New("storage versions not registered: " + strings.Join(msgs, "; ")))
}

// write makes the stored entry of this server in the named object equal to e (and the
// object owned by owner, if set). It returns the revision at which the object holds
// the entry.
func (m *Manager) write(ctx context.Context, name string, e Entry, keys wire.EncryptionKeys, owner *registry.OwnerRef) (int64, error) {
	start := time.Now()
	rv, conflicts, err := m.objs.putEntry(ctx, name, e, keys, owner)
	m.metrics.conflicts.Add(float64(conflicts))
	m.metrics.retries.Add(float64(conflicts))
	result := "success"
	if err != nil {
		result = "error"
		m.metrics.retries.Inc() // the queue tries again
	}
	m.metrics.updateLatency.WithLabelValues(result).Observe(time.Since(start).Seconds())
	return rv, err
}

// keysOf returns the encryption keys the server reports for gr.
func (m *Manager) keysOf(gr schema.GroupResource) wire.EncryptionKeys {
	if m.cfg.EncryptionKeys == nil {
		return wire.EncryptionKeys{Write: wire.Plaintext, Read: []string{wire.Plaintext}}
	}
	return m.cfg.EncryptionKeys(gr)
}

// observe reacts to a change of a StorageVersion: if this server's entry for a tracked
// resource is no longer what it reports, writes are refused until it is written again
// (at once, by a worker).
func (m *Manager) observe(obj interface{}, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if u, ok := d.Obj.(*unstructured.Unstructured); ok {
			m.forgetAgreement(u.GetName())
			if t := m.lookupName(u.GetName()); t != nil {
				m.ctrl.Add(t.gr)
			}
		}
		return
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if deleted {
		m.forgetAgreement(u.GetName())
	} else {
		m.observeAgreement(u)
	}
	t := m.lookupName(u.GetName())
	if t == nil {
		return
	}
	lock := m.lockFor(t.gr)
	if !lock.TryLock() {
		// A write of this entry is under way; have it checked once more afterwards.
		m.ctrl.Add(t.gr)
		return
	}
	defer lock.Unlock()
	if revision(u.GetResourceVersion()) <= t.verifiedRV.Load() {
		return
	}
	if !deleted {
		if sv, err := fromUnstructured(u); err == nil {
			e := findEntry(&sv.Status, m.cfg.ServerID)
			owner := t.owner.Load()
			if e != nil && sameEntry(e, t.desired.Load()) && sameKeys(encryptionKeys(sv), m.cfg.ServerID, m.keysOf(t.gr)) && (owner == nil || hasOwner(u, owner)) {
				return
			}
		}
	}
	if t.gate.isOpen() {
		m.logger.Info("Storage version entry removed or changed by someone else: writing it again",
			"resource", t.gr, "storageVersion", t.name, "deleted", deleted)
		t.gate.close(ErrEntryChanged)
	}
	m.ctrl.Add(t.gr)
}

func (m *Manager) lookupName(name string) *tracked {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.stopping {
		return nil
	}
	return m.byName[name]
}

// observeAgreement times how long an object goes without a common encoding version.
func (m *Manager) observeAgreement(u *unstructured.Unstructured) {
	entries, _, _ := unstructured.NestedSlice(u.Object, "status", "storageVersions")
	common, _, _ := unstructured.NestedString(u.Object, "status", "commonEncodingVersion")
	m.agreementMu.Lock()
	defer m.agreementMu.Unlock()
	since, waiting := m.unsetSince[u.GetName()]
	switch {
	case common == "" && len(entries) > 0 && !waiting:
		m.unsetSince[u.GetName()] = time.Now()
	case common != "" && waiting:
		m.metrics.agreement.Observe(time.Since(since).Seconds())
		delete(m.unsetSince, u.GetName())
	}
}

func (m *Manager) forgetAgreement(name string) {
	m.agreementMu.Lock()
	delete(m.unsetSince, name)
	m.agreementMu.Unlock()
}
