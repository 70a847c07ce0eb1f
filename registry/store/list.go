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
	res, version := ref.Resource, ref.Version
	pred, err := registry.NewPredicate(res, version, opts)
	if err != nil {
		return nil, err
	}
	prefix := ref.prefix()
	gr := res.GroupResource()
	var (
		rev      int64 // revision to read at; 0 = current
		minRV    int64 // the newest state must be at least this
		start    string
		fromCont bool
	)
	switch {
	case opts.Continue != "":
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return nil, apierrors.NewBadRequest("specifying resourceVersion is not allowed when using continue")
		}
		st, r, err := storage.DecodeContinue(prefix, opts.Continue)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: %v", err))
		}
		start, fromCont = st, true
		if r > 0 {
			rev = r
		}
	case opts.ResourceVersion != "":
		n, err := parseRV(gr, opts.ResourceVersion)
		if err != nil {
			return nil, err
		}
		switch opts.ResourceVersionMatch {
		case metav1.ResourceVersionMatchExact:
			if n == 0 {
				return nil, apierrors.NewBadRequest("resourceVersionMatch Exact needs a resourceVersion other than 0")
			}
			rev = n
		case metav1.ResourceVersionMatchNotOlderThan:
			minRV = n
		case "":
			if opts.Limit > 0 && n > 0 {
				rev = n // legacy: a paged list at N is exact
			} else {
				minRV = n
			}
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("unknown resourceVersionMatch %q: allowed are Exact and NotOlderThan", opts.ResourceVersionMatch))
		}
	case opts.ResourceVersionMatch != "":
		return nil, apierrors.NewBadRequest("resourceVersionMatch is forbidden unless resourceVersion is set")
	}

	out := &unstructured.UnstructuredList{Object: map[string]interface{}{
		"apiVersion": res.APIVersion(version),
		"kind":       res.Names.ListKind,
	}}
	if out.GetKind() == "" {
		out.SetKind(res.Names.Kind + "List")
	}
	var objs []*registry.Object
	var unreadable []unreadableObject
	// Keep reading pages until limit matches are found: selectors filter after the read.
	pageSize := opts.Limit
	for {
		var want int64
		if opts.Limit > 0 {
			want = opts.Limit - int64(len(objs))
			pageSize = max(pageSize, want)
		}
		page, err := s.storage.List(ctx, prefix, storage.ListOptions{Revision: rev, Limit: pageSize, Start: start})
		if err != nil {
			if errors.Is(err, storage.ErrCompacted) && fromCont {
				return nil, expiredContinue(prefix, start)
			}
			return nil, s.storageError(res, "", err)
		}
		if rev == 0 {
			rev = page.Revision
			if err := checkNotTooNew(minRV, rev); err != nil {
				return nil, err
			}
		}
		for i, kv := range page.Items {
			obj, err := res.Decode(kv.Value, kv.Revision)
			if err != nil {
				unreadable = append(unreadable, unreadableObject{key: s.storage.Prefix() + "/" + kv.Key, err: err})
				if len(unreadable) == maxUnreadable {
					return nil, s.unreadableError(res, prefix, unreadable, true)
				}
				continue
			}
			s.recent.Saw(kv)
			if !pred.Matches(obj) {
				continue
			}
			objs = append(objs, obj)
			if opts.Limit > 0 && int64(len(objs)) == opts.Limit {
				if i < len(page.Items)-1 || page.More {
					token, err := storage.EncodeContinue(prefix, kv.Key+"\x00", rev)
					if err != nil {
						return nil, apierrors.NewInternalError(err)
					}
					out.SetContinue(token)
					if pred.Empty() {
						remaining := int64(len(page.Items)-1-i) + page.Remaining
						out.SetRemainingItemCount(&remaining)
					}
				}
				return s.finishList(ctx, res, version, out, objs, rev, prefix, unreadable)
			}
		}
		if !page.More || len(page.Items) == 0 {
			return s.finishList(ctx, res, version, out, objs, rev, prefix, unreadable)
		}
		start = page.Items[len(page.Items)-1].Key + "\x00"
		pageSize *= 2
	}
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
