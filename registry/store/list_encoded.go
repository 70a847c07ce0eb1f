package store

import (
	"context"
	"errors"
	"strconv"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/watchcache"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EncodedList is a list whose items are encoded already, in one format.
type EncodedList struct {
	APIVersion, Kind string
	Meta             metav1.ListMeta
	Items            [][]byte
}

// ItemEncoder encodes list items (objects in the list's version, defaults applied)
// in the format it names: items encoded in the same format and version are
// interchangeable.
type ItemEncoder struct {
	Format string
	Encode func(*registry.Object) ([]byte, error)
}

// errUnreadable: a selected object cannot be decoded.
var errUnreadable = errors.New("a listed object cannot be decoded")

// itemKey keys an entry's kept encoding: per definition, version and format.
type itemKey struct {
	res     *registry.Resource
	version string
	format  string
}

// ListEncoded is List with its items encoded by enc. A list a watch cache answers
// keeps each item's encoding in the cache, so that the next list of the resource in
// the same version and format sends the kept bytes: no decoding, conversion,
// defaulting or encoding of objects that did not change.
func (s *Store) ListEncoded(ctx context.Context, ref Ref, opts metav1.ListOptions, enc ItemEncoder) (*EncodedList, error) {
	p, err := s.beginList(ctx, ref, opts)
	if err != nil {
		return nil, err
	}
	if p.snap == nil {
		l, err := s.listEtcd(ctx, ref, p)
		if err != nil {
			return nil, err
		}
		out := encodedShell(l.GetAPIVersion(), l.GetKind(), l.GetResourceVersion(), l.GetContinue(), l.GetRemainingItemCount())
		for i := range l.Items {
			b, err := enc.Encode(&l.Items[i])
			if err != nil {
				return nil, s.internalError(ref.Resource, err)
			}
			out.Items = append(out.Items, b)
		}
		return out, nil
	}
	sel, err := s.selectEntries(ref, p, false)
	if err != nil {
		return nil, err
	}
	items, err := s.encodeEntries(ctx, ref, enc, p.cache, sel)
	if errors.Is(err, errUnreadable) {
		// Selected again, decoding all: the error names every unreadable object.
		if _, err = s.selectEntries(ref, p, true); err == nil {
			err = s.internalError(ref.Resource, errUnreadable)
		}
	}
	if err != nil {
		return nil, err
	}
	o := p.out
	out := encodedShell(o.GetAPIVersion(), o.GetKind(), "", o.GetContinue(), o.GetRemainingItemCount())
	out.Meta.ResourceVersion = strconv.FormatInt(p.snap.Rev, 10)
	out.Items = items
	return out, nil
}

func encodedShell(apiVersion, kind, rv, cont string, remaining *int64) *EncodedList {
	return &EncodedList{APIVersion: apiVersion, Kind: kind, Meta: metav1.ListMeta{ResourceVersion: rv, Continue: cont, RemainingItemCount: remaining}}
}

// encodeEntries returns the selected entries' encodings: those kept, and the others
// decoded, converted (in one batch), defaulted and encoded now, then kept.
func (s *Store) encodeEntries(ctx context.Context, ref Ref, enc ItemEncoder, c *watchcache.Cache, sel selection) ([][]byte, error) {
	res, version := ref.Resource, ref.Version
	key := itemKey{res, version, enc.Format}
	items := make([][]byte, len(sel.entries))
	var missing []int
	var objs []*registry.Object
	for i, e := range sel.entries {
		if b, ok := e.Encoded(key); ok {
			items[i] = b
			continue
		}
		obj := sel.objs[i]
		if obj == nil {
			var err error
			if obj, err = res.Decode(e.Value, e.Revision); err != nil {
				return nil, errUnreadable
			}
		}
		missing = append(missing, i)
		objs = append(objs, obj)
	}
	if len(objs) == 0 {
		return items, nil
	}
	if err := res.Convert(ctx, objs, version); err != nil {
		return nil, s.conversionError(res, err)
	}
	sch := res.Schema(version)
	var added int64
	for j, i := range missing {
		sch.DefaultStored(objs[j].Object)
		b, err := enc.Encode(objs[j])
		if err != nil {
			return nil, s.internalError(res, err)
		}
		items[i] = b
		added += sel.entries[i].KeepEncoded(key, b)
	}
	c.AddEncoded(added)
	return items, nil
}
