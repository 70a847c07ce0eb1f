package store

import (
	"time"

	"github.com/concordproject/concord/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// grace is what a deletion does with the grace period of an object of a resource
// that deletes gracefully (registry.Hooks.GracePeriod).
type grace int

const (
	// graceNone: the deletion is not graceful (the resource's is not, or the object's
	// grace period ran out, 0 or none): it deletes the object now, unless finalizers
	// keep it.
	graceNone grace = iota
	// gracePending: the object is already being deleted, within a period no longer
	// than the one asked: the deletion changes nothing.
	gracePending
	// graceMarked: the deletion starts, or shortens the period of one started; the
	// object's deletionTimestamp and deletionGracePeriodSeconds say so, to be written.
	graceMarked
)

// graceful decides, as Kubernetes' BeforeDelete does, what a deletion asking for
// requested seconds (nil: none) does to obj, and marks obj where it starts or
// shortens a graceful deletion. It returns the period obj is marked with.
//
//   - A negative period, asked or stored, counts as 1 second.
//   - An object not yet being deleted gets deletionTimestamp now plus the period the
//     resource's hook gives, deletionGracePeriodSeconds that period, and its
//     generation (if any) one more.
//   - One being deleted with a period of 0, or none, is deleted now (graceNone).
//   - One being deleted otherwise is only shortened: a period no shorter than its own
//     (or none) changes nothing; a shorter one moves its deletionTimestamp back by
//     the difference, though never before now, where a period other than 0 becomes 1
//     second: someone is still to delete the object with 0.
func (s *Store) graceful(res *registry.Resource, obj *registry.Object, requested *int64) (grace, int64) {
	if res.Hooks == nil || res.Hooks.GracePeriod == nil {
		return graceNone, 0
	}
	if requested != nil && *requested < 0 {
		requested = ptr.To[int64](1)
	}
	stored := obj.GetDeletionGracePeriodSeconds()
	if stored != nil && *stored < 0 {
		stored = ptr.To[int64](1)
		obj.SetDeletionGracePeriodSeconds(stored)
	}
	now := s.nowTime()
	if since := obj.GetDeletionTimestamp(); since != nil {
		switch {
		case stored == nil || *stored == 0:
			return graceNone, 0
		case requested == nil || *requested >= *stored:
			return gracePending, *stored
		}
		period := *requested
		at := metav1.NewTime(since.Add(time.Duration(period-*stored) * time.Second))
		if at.Before(&now) {
			at = now
			if period != 0 {
				period = 1
			}
		}
		obj.SetDeletionTimestamp(&at)
		obj.SetDeletionGracePeriodSeconds(&period)
		return graceMarked, period
	}
	period := res.Hooks.GracePeriod(obj, requested)
	at := metav1.NewTime(now.Add(time.Duration(period) * time.Second))
	obj.SetDeletionTimestamp(&at)
	obj.SetDeletionGracePeriodSeconds(&period)
	if g := obj.GetGeneration(); g > 0 {
		obj.SetGeneration(g + 1)
	}
	return graceMarked, period
}
