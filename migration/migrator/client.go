package migrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/concordproject/concord/objectjson"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
)

// clientPath migrates page after page by reading each object and writing it back.
// While one page is written, the next is read.
func (m *Migrator) clientPath(ctx context.Context, res Resource, cp Checkpoint, report ReportFunc) (Checkpoint, error) {
	logger := klog.FromContext(ctx)
	type listed struct {
		page  *listPage
		items []item
		err   error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fetch := func(token string) <-chan listed {
		c := make(chan listed, 1)
		go func() {
			p, err := m.listResuming(ctx, res, token)
			var items []item
			if err == nil {
				// Done here, while the previous page is written, rather than on each
				// write's path.
				items = prepare(p)
			}
			c <- listed{p, items, err}
		}()
		return c
	}
	next := fetch(cp.Continue)
	for {
		var l listed
		select {
		case l = <-next:
		case <-ctx.Done():
			return cp, context.Cause(ctx)
		}
		if l.err != nil {
			err := m.unreadable(ctx, &cp, res, l.err, report)
			if !errors.Is(err, ErrUnreadable) {
				err = fmt.Errorf("listing %s: %w", res.GroupResource(), err)
			}
			return cp, err
		}
		// Each page's writes start only while the StorageVersion the migration was
		// started for holds; the checkpoint stays before a page not written.
		if err := m.checkStorageVersion(ctx, res); err != nil {
			return cp, err
		}
		token := l.page.Metadata.Continue
		if token != "" {
			next = fetch(token)
		}
		page, failures := m.writeBack(ctx, res, l.items)
		if err := ctx.Err(); err != nil {
			// The page is incomplete: the checkpoint stays before it.
			return cp, context.Cause(ctx)
		}
		if err := m.apply(ctx, &cp, PathClient, token, page, failures, report); err != nil {
			return cp, err
		}
		if token == "" {
			logger.V(2).Info("Client-side migration done", "migrated", cp.Migrated, "skipped", cp.Skipped, "failed", cp.Failed)
			return cp, nil
		}
	}
}

// listResuming lists the page after token. A token that expired (410) is replaced
// by the one the server offers to go on at its current state, or, without one, the
// list starts over: objects already rewritten are then skipped at no cost.
func (m *Migrator) listResuming(ctx context.Context, res Resource, token string) (*listPage, error) {
	page, err := m.list(ctx, res, token, m.opts.PageSize)
	if token == "" || !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		return page, err
	}
	next := ""
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		next = st.Status().Continue
	}
	klog.FromContext(ctx).Info("Continue token expired", "resume", next != "")
	return m.list(ctx, res, next, m.opts.PageSize)
}

// itemMeta is what the migrator reads of an object: enough to write it back.
type itemMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Namespace       string `json:"namespace"`
		Name            string `json:"name"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

// item is one listed object, ready to be written back.
type item struct {
	namespace, name, resourceVersion string
	// body is the object as listed, with apiVersion and kind.
	body []byte
	// err is set when the list item could not be read; the rest is empty.
	err error
}

// prepare reads the items of page.
func prepare(page *listPage) []item {
	kind := strings.TrimSuffix(page.Kind, "List")
	items := make([]item, len(page.Items))
	for i, raw := range page.Items {
		var meta itemMeta
		if err := json.Unmarshal(raw, &meta); err != nil {
			items[i].err = err
			continue
		}
		items[i] = item{
			namespace:       meta.Metadata.Namespace,
			name:            meta.Metadata.Name,
			resourceVersion: meta.Metadata.ResourceVersion,
			body:            withTypeMeta(raw, meta, page.APIVersion, kind),
		}
	}
	return items
}

// writeBack writes back every item, Options.Concurrency at a time.
func (m *Migrator) writeBack(ctx context.Context, res Resource, items []item) (Counts, []Failure) {
	var (
		migrated, skipped atomic.Int64
		mu                sync.Mutex
		failures          []Failure
		i                 atomic.Int64
		wg                sync.WaitGroup
	)
	workers := min(m.opts.Concurrency, len(items))
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for {
				n := int(i.Add(1)) - 1
				if n >= len(items) || ctx.Err() != nil {
					return
				}
				moved, f := m.rewrite(ctx, res, &items[n])
				switch {
				case f != nil:
					mu.Lock()
					failures = append(failures, *f)
					mu.Unlock()
				case moved:
					migrated.Add(1)
				default:
					skipped.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return Counts{Migrated: migrated.Load(), Skipped: skipped.Load(), Failed: int64(len(failures))}, failures
}

// rewrite writes one listed object back unchanged. moved reports that its
// resourceVersion moved; f is non-nil if it failed (not for a cancelled ctx, which
// the caller sees).
func (m *Migrator) rewrite(ctx context.Context, res Resource, it *item) (moved bool, f *Failure) {
	if it.err != nil {
		return false, &Failure{Reason: fmt.Sprintf("undecodable list item: %v", it.err)}
	}
	ns, name := it.namespace, it.name
	var rv string
	err := m.retry(ctx, func(ctx context.Context) error {
		data, err := send(ctx, m.client.Put().AbsPath(objectPath(res, ns, name)).Body(it.body).MaxRetries(0))
		if err != nil {
			return err
		}
		rv, err = resourceVersionOf(data)
		return err
	})
	switch {
	case err == nil:
		return rv != it.resourceVersion, nil
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		// Changed (and so re-encoded) or deleted by someone else.
		return false, nil
	case ctx.Err() != nil:
		return false, nil
	}
	klog.FromContext(ctx).V(2).Info("Object not rewritten", "namespace", ns, "name", name, "err", err)
	return false, &Failure{Namespace: ns, Name: name, Reason: failureReason(err)}
}

// resourceVersionOf returns metadata.resourceVersion of the object a write answered.
// objectjson reads a whole object in half the time encoding/json takes to pick one
// field out of it, and this is on the path of every write.
func resourceVersionOf(data []byte) (string, error) {
	obj, err := objectjson.UnmarshalObject(data)
	if err != nil {
		return "", fmt.Errorf("decoding the written object: %w", err)
	}
	rv, _, err := unstructured.NestedString(obj, "metadata", "resourceVersion")
	return rv, err
}

// withTypeMeta returns item with apiVersion and kind, which list items of built-in
// resources omit and a PUT needs.
func withTypeMeta(item json.RawMessage, meta itemMeta, apiVersion, kind string) []byte {
	if meta.APIVersion != "" && meta.Kind != "" || len(item) < 2 || item[0] != '{' {
		return item
	}
	var b bytes.Buffer
	b.Grow(len(item) + len(apiVersion) + len(kind) + 32)
	b.WriteByte('{')
	if meta.APIVersion == "" {
		fmt.Fprintf(&b, "\"apiVersion\":%q,", apiVersion)
	}
	if meta.Kind == "" {
		fmt.Fprintf(&b, "\"kind\":%q,", kind)
	}
	rest := bytes.TrimSpace(item[1:])
	if len(rest) > 0 && rest[0] == '}' {
		b.Truncate(b.Len() - 1) // no member followed: drop the last comma
	}
	b.Write(rest)
	return b.Bytes()
}
