package store

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// List returns the objects of res in namespace ns ("" for all) that match the
// selectors of opts, converted to version, with Kubernetes' paging and resourceVersion
// semantics:
//
//   - resourceVersion "" reads the newest state; "0" and N with match NotOlderThan
//     (or no match and no limit) read a state at least as new as N;
//   - N with match Exact, or with a limit and no match (legacy), reads exactly at N
//     (410 Expired if compacted);
//   - limit/continue page through one consistent snapshot; a continue token whose
//     revision was compacted is a 410 Expired carrying a fresh token that continues at
//     the current revision.
func (s *Store) List(ctx context.Context, ref Ref, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	p, err := s.beginList(ctx, ref, opts)
	if err != nil {
		return nil, err
	}
	if p.snap != nil {
		return s.listCached(ctx, ref, p)
	}
	return s.listEtcd(ctx, ref, p)
}

// ListStorage is List answered by etcd alone, never by the resource's watch cache,
// which it does not start (see WatchStorage).
func (s *Store) ListStorage(ctx context.Context, ref Ref, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	p, err := s.planListing(ref, opts)
	if err != nil {
		return nil, err
	}
	s.caches.Observe(ref.Resource.Prefix(""), "list", false)
	return s.listEtcd(ctx, ref, p)
}

// beginList plans a list and finds the cached state that answers it, if one may.
func (s *Store) beginList(ctx context.Context, ref Ref, opts metav1.ListOptions) (listParams, error) {
	p, err := s.planListing(ref, opts)
	if err != nil {
		return p, err
	}
	var cached bool
	if p.cache, p.snap, cached, err = s.cachedState(ctx, ref.Resource, p.at); err != nil {
		return p, err
	}
	s.caches.Observe(ref.Resource.Prefix(""), "list", cached)
	return p, nil
}

// planListing works out a list's selectors, where it reads, and its (empty) answer.
func (s *Store) planListing(ref Ref, opts metav1.ListOptions) (listParams, error) {
	res, version := ref.Resource, ref.Version
	pred, err := registry.NewPredicate(res, version, opts)
	if err != nil {
		return listParams{}, err
	}
	at, err := planList(ref.prefix(), res.GroupResource(), opts)
	if err != nil {
		return listParams{}, err
	}
	out := &unstructured.UnstructuredList{Object: map[string]interface{}{
		"apiVersion": res.APIVersion(version),
		"kind":       res.Names.ListKind,
	}}
	if out.GetKind() == "" {
		out.SetKind(res.Names.Kind + "List")
	}
	return listParams{pred: pred, at: at, limit: opts.Limit, out: out}, nil
}

// listEtcd answers a list from etcd.
func (s *Store) listEtcd(ctx context.Context, ref Ref, p listParams) (*unstructured.UnstructuredList, error) {
	res, version, prefix := ref.Resource, ref.Version, ref.prefix()
	at, out, pred, limit := p.at, p.out, p.pred, p.limit
	var objs []*registry.Object
	var unreadable []unreadableObject
	// Keep reading pages until limit matches are found: selectors filter after the read.
	pageSize := limit
	for {
		if limit > 0 {
			pageSize = max(pageSize, limit-int64(len(objs)))
		}
		page, err := s.storage.List(ctx, prefix, storage.ListOptions{Revision: at.rev, Limit: pageSize, Start: at.key})
		if err != nil {
			if errors.Is(err, storage.ErrCompacted) && at.fromContinue {
				return nil, expiredContinue(prefix, at.key)
			}
			return nil, s.storageError(res, "", err)
		}
		if at.rev == 0 {
			at.rev = page.Revision
			if err := checkNotTooNew(at.minRV, at.rev); err != nil {
				return nil, err
			}
		}
		for i, kv := range page.Items {
			obj, err := s.decodeListed(res, prefix, kv, &unreadable)
			if obj == nil {
				if err != nil {
					return nil, err
				}
				continue
			}
			s.recent.Saw(kv)
			if !pred.Matches(obj) {
				continue
			}
			objs = append(objs, obj)
			if limit > 0 && int64(len(objs)) == limit {
				if i < len(page.Items)-1 || page.More {
					remaining := int64(len(page.Items)-1-i) + page.Remaining
					if err := setContinue(out, prefix, kv.Key, at.rev, remaining, pred.Empty()); err != nil {
						return nil, err
					}
				}
				return s.finishList(ctx, res, version, out, objs, at.rev, prefix, unreadable)
			}
		}
		if !page.More || len(page.Items) == 0 {
			return s.finishList(ctx, res, version, out, objs, at.rev, prefix, unreadable)
		}
		at.key = page.Items[len(page.Items)-1].Key + "\x00"
		pageSize *= 2
	}
}

// listStart is where a list reads from.
type listStart struct {
	rev   int64 // the revision to read at; 0: the current one
	minRV int64 // the current revision must be at least this
	// consistent: the list must see every write acknowledged before it started (a
	// cache answers it only once it has seen etcd's current revision). Otherwise,
	// with rev 0, any state at least minRV new will do.
	consistent   bool
	key          string // the first key (a continue token's)
	fromContinue bool
}

// planList reads where a list of prefix starts from its options: Kubernetes'
// resourceVersion, resourceVersionMatch, limit and continue rules.
func planList(prefix string, gr schema.GroupResource, opts metav1.ListOptions) (listStart, error) {
	var at listStart
	switch {
	case opts.Continue != "":
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return at, apierrors.NewBadRequest("specifying resourceVersion is not allowed when using continue")
		}
		key, rev, err := storage.DecodeContinue(prefix, opts.Continue)
		if err != nil {
			return at, apierrors.NewBadRequest(err.Error()) // the error names the token
		}
		at.key, at.fromContinue = key, true
		if rev > 0 {
			at.rev = rev
		} else {
			at.consistent = true // a token that goes on at the current state
		}
	case opts.ResourceVersion != "":
		n, err := parseRV(gr, opts.ResourceVersion)
		if err != nil {
			return at, err
		}
		switch opts.ResourceVersionMatch {
		case metav1.ResourceVersionMatchExact:
			if n == 0 {
				return at, apierrors.NewBadRequest("resourceVersionMatch Exact needs a resourceVersion other than 0")
			}
			at.rev = n
		case metav1.ResourceVersionMatchNotOlderThan:
			at.minRV = n
		case "":
			if opts.Limit > 0 && n > 0 {
				at.rev = n // legacy: a paged list at N is exact
			} else {
				at.minRV = n
			}
		default:
			return at, apierrors.NewBadRequest(fmt.Sprintf("unknown resourceVersionMatch %q: allowed are Exact and NotOlderThan", opts.ResourceVersionMatch))
		}
	case opts.ResourceVersionMatch != "":
		return at, apierrors.NewBadRequest("resourceVersionMatch is forbidden unless resourceVersion is set")
	default:
		at.consistent = true
	}
	return at, nil
}

// setContinue gives a page that stops at lastKey (at revision rev, with remaining
// objects after it) its continue token, and the remaining count when every object
// counts (no selector).
func setContinue(out *unstructured.UnstructuredList, prefix, lastKey string, rev, remaining int64, counted bool) error {
	token, err := storage.EncodeContinue(prefix, lastKey+"\x00", rev)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	out.SetContinue(token)
	if counted {
		out.SetRemainingItemCount(&remaining)
	}
	return nil
}

// finishList converts and defaults the objects read into out, or, if some objects could
// not be read, fails the whole list naming them.
func (s *Store) finishList(ctx context.Context, res *registry.Resource, version string, out *unstructured.UnstructuredList,
	objs []*registry.Object, rev int64, prefix string, unreadable []unreadableObject) (*unstructured.UnstructuredList, error) {
	if len(unreadable) > 0 {
		return nil, s.unreadableError(res, prefix, unreadable, false)
	}
	if err := res.Convert(ctx, objs, version); err != nil {
		return nil, s.conversionError(res, err)
	}
	out.SetResourceVersion(strconv.FormatInt(rev, 10))
	out.Items = make([]unstructured.Unstructured, len(objs))
	sch := res.Schema(version)
	for i, o := range objs {
		sch.DefaultStored(o.Object)
		out.Items[i] = *o
	}
	return out, nil
}

// expiredContinue is the 410 for a continue token whose snapshot was compacted. Its
// ListMeta carries a token that goes on from the same key at the current revision.
func expiredContinue(prefix, start string) error {
	err := apierrors.NewResourceExpired("the snapshot this continue token pages through has been compacted; " +
		"start a new list, or continue with the token in this response to read the rest at the current state " +
		"(objects changed since the first page may then be missed or seen twice)")
	if token, terr := storage.EncodeContinue(prefix, start, -1); terr == nil {
		err.ErrStatus.Continue = token
	}
	return err
}

// maxUnreadable is how many unreadable objects a list names before it stops reading.
const maxUnreadable = 100

// unreadableObject is a stored object a list could not decode.
type unreadableObject struct {
	key string // the etcd key
	err error
}

// decodeListed decodes a listed object. One that cannot be decoded is added to
// unreadable and nil returned, with the list's error once maxUnreadable are.
func (s *Store) decodeListed(res *registry.Resource, prefix string, kv *storage.KeyValue, unreadable *[]unreadableObject) (*registry.Object, error) {
	obj, err := res.Decode(kv.Value, kv.Revision)
	if err == nil {
		return obj, nil
	}
	*unreadable = append(*unreadable, unreadableObject{key: s.storage.Prefix() + "/" + kv.Key, err: err})
	if len(*unreadable) == maxUnreadable {
		return nil, s.unreadableError(res, prefix, *unreadable, true)
	}
	return nil, nil
}

// unreadableError is the answer to a list that met objects it cannot decode (stored in
// a version this server does not know, or not JSON): like Kubernetes, the whole list
// fails, with 500 and reason StorageReadError, and names every such object read (up
// to maxUnreadable; stopped says the read stopped there) by its etcd key in a cause,
// so that an operator or a migrator knows which objects to deal with. A list never
// leaves objects out silently: clients would take them for deleted.
func (s *Store) unreadableError(res *registry.Resource, prefix string, objs []unreadableObject, stopped bool) error {
	gr := res.GroupResource()
	causes := make([]metav1.StatusCause, 0, len(objs)+1)
	for _, o := range objs {
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeUnexpectedServerResponse, Field: o.key, Message: o.err.Error()})
	}
	msg := fmt.Sprintf("%d stored %s could not be read: %v", len(objs), gr, objs[0].err)
	if len(objs) > 1 {
		msg += fmt.Sprintf(" (and %d more, named in the causes)", len(objs)-1)
	}
	if stopped {
		msg += fmt.Sprintf("; reading stopped after %d", maxUnreadable)
		causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeTooMany,
			Message: fmt.Sprintf("reading stopped after %d unreadable objects", maxUnreadable)})
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusInternalServerError,
		Reason:  metav1.StatusReasonStoreReadError,
		Message: msg,
		Details: &metav1.StatusDetails{Group: gr.Group, Kind: gr.Resource, Name: s.storage.Prefix() + "/" + prefix, Causes: causes},
	}}
}
