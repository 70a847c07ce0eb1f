package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
)

// WriteOptions apply to Create, Update and Delete.
type WriteOptions struct {
	// DryRun runs every step but the write to storage.
	DryRun bool
	// Subresource is "" for the main resource, "status", or another subresource that
	// writes part of the object (a namespace's "finalize"): the store treats such an
	// update as one of the main resource but for allocation, and its Semantics apply
	// the subresource's rules.
	Subresource string
	// Mutate, if set, is mutating admission for Create and Update: it runs on the
	// object as the client sent it (an update's as computed from the current object),
	// before the store prepares and validates it, and may change it in place.
	Mutate AdmitFunc
	// Admit, if set, is validating admission for Create and Update: it runs on the
	// object about to be stored, after validation and before the write. Delete runs
	// it with obj nil and old the object as stored, before it deletes (or marks it
	// terminating), again for every attempt a storage conflict retries.
	Admit AdmitFunc
	// KeepManagedFields keeps an object's managedFields when it is too large to
	// store with them (server-side apply, whose field ownership is its point): the
	// write is refused (413). Otherwise, as in Kubernetes, the object is stored
	// without them.
	KeepManagedFields bool
}

// AdmitFunc is validating admission: it sees obj as it will be stored, with old, the
// current object of an update (nil for a creation), and may refuse the write with an
// error that goes to the client as is. On an update it runs again for every attempt a
// storage conflict retries.
type AdmitFunc func(ctx context.Context, obj, old *registry.Object) error

// DeleteOptions tune Delete.
type DeleteOptions struct {
	WriteOptions
	// Preconditions must hold on the current object or the deletion is a 409
	// Conflict, as for Update.
	Preconditions *metav1.Preconditions
	// Propagation is the request's propagationPolicy (orphanDependents true is
	// Orphan, false Background); nil leaves the choice to the object and its
	// resource (see Delete).
	Propagation *metav1.DeletionPropagation
	// GracePeriodSeconds is the request's gracePeriodSeconds: how long an object of a
	// resource that deletes gracefully (registry.Hooks.GracePeriod) stays once its
	// deletion starts; nil leaves it to the resource.
	GracePeriodSeconds *int64
}

// Create stores obj (in version of res) as a new object in namespace ns and returns it
// as stored, in version. It fills uid, creationTimestamp, generation 1 (unless the
// resource's Semantics set it, or its hooks say it has none) and a name from
// generateName; refuses a resourceVersion (400), a namespace that does not exist
// (404) or is terminating (403), an invalid object (422) and an existing name (409).
// obj is changed in place.
func (s *Store) Create(ctx context.Context, ref Ref, obj *registry.Object, opts WriteOptions) (*registry.Object, error) {
	res, version, ns := ref.Resource, ref.Version, ref.Namespace
	if res.Namespaced {
		obj.SetNamespace(ns)
	} else {
		obj.SetNamespace("")
	}
	if obj.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("metadata.resourceVersion must not be set on objects to be created")
	}
	if opts.Mutate != nil {
		if err := opts.Mutate(ctx, obj, nil); err != nil {
			return nil, err
		}
		if res.Namespaced && obj.GetNamespace() != ns {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("admission changed the namespace of the object from the request's (%s) to %q", ns, obj.GetNamespace()))
		}
	}
	if obj.GetName() == "" && obj.GetGenerateName() != "" {
		obj.SetName(obj.GetGenerateName() + utilrand.String(5))
	}
	obj.SetUID(uuid.NewUUID())
	obj.SetCreationTimestamp(s.nowTime())
	if res.Semantics == nil && (res.Hooks == nil || !res.Hooks.NoGeneration) {
		// With Semantics, the generation is theirs to set, as Kubernetes' strategies do.
		obj.SetGeneration(1)
	}
	obj.SetDeletionTimestamp(nil)
	obj.SetDeletionGracePeriodSeconds(nil)
	obj.SetSelfLink("")
	if v := res.Version(version); res.Semantics == nil && v != nil && v.Subresources != nil && v.Subresources.Status != nil {
		// With Semantics, the status is theirs to reset, as Kubernetes' strategies do
		// (a Node, say, is created with its status).
		unstructured.RemoveNestedField(obj.Object, "status")
	}
	if res.Hooks != nil && res.Hooks.AdmitCreate != nil {
		if err := res.Hooks.AdmitCreate(ctx, obj); err != nil {
			return nil, err
		}
	}
	if res.Hooks != nil && res.Hooks.PrepareForCreate != nil {
		res.Hooks.PrepareForCreate(ctx, obj)
	}
	// As Kubernetes' registry does, the allocation comes before validation, which
	// sees what was allocated (a Service's cluster IPs and node ports).
	alloc, err := allocate(ctx, res, obj, nil, opts.DryRun)
	if err != nil {
		return nil, err
	}
	written := false
	defer func() { alloc.Finish(context.WithoutCancel(ctx), written) }()
	if err := res.ValidateCreate(ctx, version, obj); err != nil {
		return nil, err
	}
	if res.Namespaced {
		if err := s.namespaces.Admit(ctx, res.GroupResource(), ns); err != nil {
			return nil, err
		}
	}
	if opts.Admit != nil {
		if err := opts.Admit(ctx, obj, nil); err != nil {
			return nil, err
		}
	}
	data, err := res.Encode(ctx, obj)
	if err != nil {
		return nil, s.conversionError(res, err)
	}
	if opts.DryRun {
		return obj, nil
	}
	key := res.Key(ns, obj.GetName())
	rev, data, err := s.write(ctx, res, obj, data, opts, func(data []byte) (int64, error) {
		return s.storage.Create(ctx, key, data, storage.WithTTL(res.TTL))
	})
	if err != nil {
		return nil, s.storageError(res, obj.GetName(), err)
	}
	written = true
	s.recent.Wrote(key, data, rev)
	obj.SetResourceVersion(strconv.FormatInt(rev, 10))
	return obj, nil
}

// write writes data, obj as encoded, with put. Should etcd not take it for its size,
// it writes obj again without its managedFields (which can be large), unless opts
// keep them: Kubernetes does the same. It returns what it wrote.
func (s *Store) write(ctx context.Context, res *registry.Resource, obj *registry.Object, data []byte, opts WriteOptions, put func([]byte) (int64, error)) (int64, []byte, error) {
	rev, err := put(data)
	if !errors.Is(err, storage.ErrTooLarge) || opts.KeepManagedFields || len(obj.GetManagedFields()) == 0 {
		return rev, data, err
	}
	obj.SetManagedFields(nil)
	if data, err = res.Encode(ctx, obj); err != nil {
		return 0, nil, s.conversionError(res, err)
	}
	rev, err = put(data)
	return rev, data, err
}

// allocate runs res's Allocate hook, if it has one, for obj (old: nil for a creation).
func allocate(ctx context.Context, res *registry.Resource, obj, old *registry.Object, dryRun bool) (registry.Allocation, error) {
	if res.Hooks == nil || res.Hooks.Allocate == nil {
		return registry.Allocation{}, nil
	}
	return res.Hooks.Allocate(ctx, obj, old, dryRun)
}

// release runs res's Release hook, if it has one, for obj, which is gone.
func release(ctx context.Context, res *registry.Resource, obj *registry.Object) {
	if res.Hooks != nil && res.Hooks.Release != nil {
		res.Hooks.Release(context.WithoutCancel(ctx), obj)
	}
}
