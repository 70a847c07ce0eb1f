package registry

import (
	"context"
	"errors"
	"fmt"
	"strconv"

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
func (s *Store) List(ctx context.Context, res *Resource, version, ns string, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	pred, err := NewPredicate(res, version, opts)
	if err != nil {
		return nil, err
	}
	prefix := res.Prefix(ns)
	gr := res.GroupResource()
	var (
		rev      int64 // revision to read at; 0 = current
		min      int64 // the newest state must be at least this
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
			min = n
		case "":
			if opts.Limit > 0 && n > 0 {
				rev = n // legacy: a paged list at N is exact
			} else {
				min = n
			}
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("unknown resourceVersionMatch %q: allowed are Exact and NotOlderThan", opts.ResourceVersionMatch))
		}
	case opts.ResourceVersionMatch != "":
		return nil, apierrors.NewBadRequest("resourceVersionMatch is forbidden unless resourceVersion is set")
	}

	out := &unstructured.UnstructuredList{Object: map[string]interface{}{
		"apiVersion": res.apiVersion(version),
		"kind":       res.Names.ListKind,
	}}
	if out.GetKind() == "" {
		out.SetKind(res.Names.Kind + "List")
	}
	var objs []*Object
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
			if err := s.checkNotTooNew(ctx, res, min, rev); err != nil {
				return nil, err
			}
		}
		for i, kv := range page.Items {
			obj, err := res.Decode(kv.Value, kv.Revision)
			if err != nil {
				return nil, s.internalError(res, err)
			}
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
				return s.finishList(ctx, res, version, out, objs, rev)
			}
		}
		if !page.More || len(page.Items) == 0 {
			return s.finishList(ctx, res, version, out, objs, rev)
		}
		start = page.Items[len(page.Items)-1].Key + "\x00"
		pageSize *= 2
	}
}

func (s *Store) finishList(ctx context.Context, res *Resource, version string, out *unstructured.UnstructuredList, objs []*Object, rev int64) (*unstructured.UnstructuredList, error) {
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
