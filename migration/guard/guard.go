package guard

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/wire"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// Observation is what one revision of a StorageVersion object says of how its
// resource is written (or, made by the trigger from discovery, what one server says).
type Observation struct {
	// Agreed is true when every server writes the same version with the same
	// encryption key (always true when the hash comes from discovery, which speaks for
	// one server).
	Agreed bool
	// Current is the hash of that version (and key: wire.StorageHash) when Agreed.
	Current string
	// Reported are the hashes the servers report (just Current from discovery).
	Reported []string
	// EncodingVersion is the common encoding version ("apps/v1"), when known.
	EncodingVersion string
	// ResourceVersion is the resource's StorageVersion object's resourceVersion; ""
	// when the hash comes from discovery.
	ResourceVersion string
}

// Observe reads a StorageVersion object of a resource of kind. Each server's hash is
// its encoding version's with the encryption key it writes with (wire.StorageHash):
// a new write key, like a new version, is agreed on first and then migrated to.
func Observe(kind string, sv *unstructured.Unstructured) (Observation, error) {
	obj := &apiserverinternalv1alpha1.StorageVersion{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sv.Object, obj); err != nil {
		return Observation{}, err
	}
	keys, err := wire.ParseEncryptionKeys(sv.GetAnnotations()[wire.AnnotationEncryptionKeys])
	if err != nil {
		return Observation{}, fmt.Errorf("StorageVersion %s: %w", sv.GetName(), err)
	}
	hash := func(encodingVersion, key string) (string, error) {
		gv, err := schema.ParseGroupVersion(encodingVersion)
		if err != nil {
			return "", err
		}
		return wire.StorageHash(wire.StorageVersionHash(gv.Group, gv.Version, kind), key), nil
	}
	obs := Observation{ResourceVersion: sv.GetResourceVersion()}
	writeKeys := map[string]bool{}
	for _, e := range obj.Status.StorageVersions {
		key := wire.WriteKeyOf(keys, e.APIServerID)
		writeKeys[key] = true
		h, err := hash(e.EncodingVersion, key)
		if err != nil {
			return Observation{}, fmt.Errorf("StorageVersion %s: server %s: %w", sv.GetName(), e.APIServerID, err)
		}
		if !slices.Contains(obs.Reported, h) {
			obs.Reported = append(obs.Reported, h)
		}
	}
	if c := obj.Status.CommonEncodingVersion; c != nil && len(obj.Status.StorageVersions) > 0 && len(writeKeys) == 1 {
		h, err := hash(*c, wire.WriteKeyOf(keys, obj.Status.StorageVersions[0].APIServerID))
		if err != nil {
			return Observation{}, fmt.Errorf("StorageVersion %s: %w", sv.GetName(), err)
		}
		obs.Agreed, obs.Current, obs.EncodingVersion = true, h, *c
	}
	return obs, nil
}

// ErrHistoryUnread means the StorageVersion object's history could not be read to
// the end asked for: Carried cannot vouch for the change.
var ErrHistoryUnread = errors.New("the StorageVersion object's history could not be read")

// historyTimeout bounds the read of a history: the events asked for are in the
// server's watch cache or etcd already, so a read that takes longer has stalled.
const historyTimeout = 30 * time.Second

// Change names the move of gr's StorageVersion object (of a resource of Kind) from
// resourceVersion From to To, under a migration to Hash.
type Change struct {
	Resource schema.GroupResource
	Kind     string
	Hash     string
	From, To string
}

// Carried returns nil if every revision of the StorageVersion object after From, up
// to and including To, had the servers agree on Hash; an error wrapping
// ErrHistoryUnread if the history could not be read (compacted, say), and another
// error naming the first revision that breaks the rule otherwise.
func Carried(ctx context.Context, dyn dynamic.Interface, c Change) error {
	from, errFrom := strconv.ParseUint(c.From, 10, 64)
	to, errTo := strconv.ParseUint(c.To, 10, 64)
	switch {
	case errFrom != nil || errTo != nil:
		return fmt.Errorf("%w: resourceVersions %q and %q are not numbers", ErrHistoryUnread, c.From, c.To)
	case to < from:
		return fmt.Errorf("%w: resourceVersion %d is older than %d", ErrHistoryUnread, to, from)
	case to == from:
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, historyTimeout)
	defer cancel()
	name := wire.StorageVersionName(c.Resource)
	w, err := dyn.Resource(migrationapi.StorageVersions).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: c.From,
		AllowWatchBookmarks: true,
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHistoryUnread, err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		done, err := c.check(ev, to)
		if err != nil || done {
			return err
		}
	}
	return fmt.Errorf("%w: the watch of StorageVersion %s ended before resourceVersion %d: %w", ErrHistoryUnread, name, to, ctx.Err())
}

// check applies the rule to one event of the history; done once it reaches to.
func (c Change) check(ev watch.Event, to uint64) (done bool, err error) {
	if ev.Type == watch.Error {
		return false, fmt.Errorf("%w: %w", ErrHistoryUnread, apierrors.FromObject(ev.Object))
	}
	u, ok := ev.Object.(*unstructured.Unstructured)
	if !ok {
		return false, fmt.Errorf("%w: a watch event of %T", ErrHistoryUnread, ev.Object)
	}
	rv, err := strconv.ParseUint(u.GetResourceVersion(), 10, 64)
	if err != nil {
		return false, fmt.Errorf("%w: resourceVersion %q", ErrHistoryUnread, u.GetResourceVersion())
	}
	switch ev.Type {
	case watch.Bookmark:
		return rv >= to, nil
	case watch.Deleted:
		return false, fmt.Errorf("StorageVersion %s was deleted at resourceVersion %d", u.GetName(), rv)
	}
	if rv > to { // To itself is not in the history: it was not this object's revision
		return false, fmt.Errorf("%w: StorageVersion %s has no revision %d", ErrHistoryUnread, u.GetName(), to)
	}
	obs, err := Observe(c.Kind, u)
	if err != nil {
		return false, err
	}
	if !obs.Agreed || obs.Current != c.Hash {
		return false, fmt.Errorf("StorageVersion %s at resourceVersion %d has the servers write %v, not %s only", u.GetName(), rv, obs.Reported, c.Hash)
	}
	return rv == to, nil
}
