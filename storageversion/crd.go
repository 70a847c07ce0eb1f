package storageversion

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/concordproject/concord/registry"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
)

// drainTimeout bounds how long a storage version change of a custom resource waits for
// the writes under way (encoding in the old version) to finish.
const drainTimeout = 10 * time.Second

// Publish puts the definition res of a custom resource into service with put (which
// puts it into the registry) only once this server's entry in the resource's
// StorageVersion says what res encodes in:
//
//  1. When the encoding version changes (or the resource is new), writes of the
//     resource are held at the barrier (they wait, bounded, then get 503) and the
//     writes under way are waited for, so that none encodes in a version the entry no
//     longer reports.
//  2. The entry (encoding = storage version, decodable = every version, served = the
//     served ones) is written, the object owned by res.Owner.
//  3. put runs, and writes are let through again, now encoding in the new version.
//
// A change to a storage version that another server reporting the resource does not
// decode yet (it has not seen the definition change) waits: res is put into service
// keeping its previous storage version, the entry saying that this server decodes the
// new one too, and ErrPeersCatchingUp is returned for the caller to retry; so no
// server writes an object another live server cannot read.
//
// A failure puts back the previous entry and definition (the worker rewrites the
// entry, then lets writes through again), so that the resource is never wedged, and
// is returned for the caller to retry. Calls for one resource are serialized.
// Resources without an owner, and a nil Manager, are put directly.
func (m *Manager) Publish(ctx context.Context, res *registry.Resource, put func(context.Context, *registry.Resource) error) error {
	if m == nil || res.Owner == nil {
		return put(ctx, res)
	}
	gr := res.GroupResource()
	lock := m.lockFor(gr)
	lock.Lock()
	defer lock.Unlock()
	m.mu.Lock()
	if m.stopping {
		m.mu.Unlock()
		return ErrShuttingDown
	}
	t, known := m.tracked[gr]
	if !known {
		t = m.trackLocked(gr, true)
	}
	m.mu.Unlock()

	if hold, waiting := m.holdSwitch(t, res); hold != nil {
		// Keep encoding in the version every server decodes, while telling them
		// (through this entry) that this server decodes the new one too.
		if err := m.publish(ctx, t, known, hold, put); err != nil {
			return err
		}
		return fmt.Errorf("%w: %s waits for %s to decode %s", ErrPeersCatchingUp, gr, strings.Join(waiting, ", "),
			res.GroupVersion(res.StorageVersion))
	}
	return m.publish(ctx, t, known, res, put)
}

// ErrPeersCatchingUp means a custom resource keeps its previous storage version until
// every other server reporting it decodes the new one; the caller retries.
var ErrPeersCatchingUp = errors.New("other servers do not decode the new storage version yet")

// holdSwitch returns, when res changes the storage version of a custom resource to
// one that another server reporting it (in its StorageVersion entry) does not decode
// yet, a copy of res that keeps the previous storage version, and those servers. (A
// server that has not seen the definition change could not read what this one would
// write.) nil when the switch may go ahead: no previous version, the same, every peer
// decoding the new one, or the previous version gone from the definition.
func (m *Manager) holdSwitch(t *tracked, res *registry.Resource) (*registry.Resource, []string) {
	prev := t.desired.Load()
	next := res.GroupVersion(res.StorageVersion).String()
	if prev == nil || prev.EncodingVersion == next {
		return nil, nil
	}
	obj, exists, err := m.informer.GetStore().GetByKey(t.name)
	if err != nil || !exists {
		return nil, nil
	}
	sv, err := fromUnstructured(obj.(*unstructured.Unstructured))
	if err != nil {
		return nil, nil
	}
	var waiting []string
	for _, e := range sv.Status.StorageVersions {
		if e.APIServerID != m.cfg.ServerID && !slices.Contains(e.DecodableVersions, next) {
			waiting = append(waiting, e.APIServerID)
		}
	}
	_, prevVersion, _ := strings.Cut(prev.EncodingVersion, "/")
	if len(waiting) == 0 || !slices.ContainsFunc(res.Versions, func(v registry.Version) bool { return v.Name == prevVersion }) {
		return nil, nil
	}
	hold := *res
	hold.StorageVersion = prevVersion
	return &hold, waiting
}

// publish is Publish once the storage version to encode in is decided.
func (m *Manager) publish(ctx context.Context, t *tracked, known bool, res *registry.Resource, put func(context.Context, *registry.Resource) error) error {
	gr := res.GroupResource()
	logger := klog.FromContext(ctx)
	want := EntryFor(m.cfg.ServerID, res)
	owner := *res.Owner
	prev, prevOwner := t.desired.Load(), t.owner.Load()
	wasOpen := t.gate.isOpen()
	if wasOpen && prev != nil && sameEntry(prev, &want) && prevOwner != nil && *prevOwner == owner {
		return put(ctx, res)
	}
	switching := !wasOpen || prev == nil || prev.EncodingVersion != want.EncodingVersion
	if switching {
		t.gate.close(nil)
		dctx, cancel := context.WithTimeout(ctx, drainTimeout)
		err := t.gate.drain(dctx)
		cancel()
		if err != nil {
			if wasOpen {
				t.gate.setOpen()
			}
			m.abandon(t, known)
			return fmt.Errorf("waiting for the writes to %s under way before changing its storage version: %w", gr, err)
		}
	}
	t.desired.Store(&want)
	t.owner.Store(&owner)
	rv, err := m.write(ctx, t.name, want, m.keysOf(gr), &owner)
	if err == nil && m.cfg.Mirror != nil {
		err = m.cfg.Mirror(ctx, gr, want)
	}
	if err == nil {
		t.verifiedRV.Store(rv)
		err = put(ctx, res)
	}
	if err != nil {
		if known {
			t.desired.Store(prev)
			t.owner.Store(prevOwner)
			t.gate.fail(err)
			m.ctrl.Add(gr) // the worker writes the previous entry back, then lets writes through
		} else {
			m.abandon(t, false)
		}
		return fmt.Errorf("registering the storage version of %s: %w", gr, err)
	}
	t.gate.setOpen()
	if switching {
		logger.V(2).Info("Custom resource storage version registered", "resource", gr, "entry", fmtEntry(&want))
	}
	return nil
}

// abandon stops tracking a custom resource whose first publication failed; a worker
// withdraws whatever entry may have been written.
func (m *Manager) abandon(t *tracked, known bool) {
	if known {
		return
	}
	m.mu.Lock()
	if m.tracked[t.gr] == t {
		m.untrackLocked(t.gr)
	}
	m.mu.Unlock()
	m.ctrl.Add(t.gr)
}
