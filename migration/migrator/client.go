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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// clientPath migrates page after page by reading each object and writing it back.
// While one page is written, the next is read.
func (m *Migrator) clientPath(ctx context.Context, res Resource, cp Checkpoint, report ReportFunc) (Checkpoint, error) {
	logger := klog.FromContext(ctx)
	type listed struct {
		page *listPage
		err  error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fetch := func(token string) <-chan listed {
		c := make(chan listed, 1)
		go func() {
			p, err := m.listResuming(ctx, res, token)
			c <- listed{p, err}
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
		token := l.page.Metadata.Continue
		if token != "" {
			next = fetch(token)
		}
		page, failures := m.writeBack(ctx, res, l.page)
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

// writeBack writes back every object of page, Options.Concurrency at a time.
func (m *Migrator) writeBack(ctx context.Context, res Resource, page *listPage) (Counts, []Failure) {
	var (
		migrated, skipped atomic.Int64
		mu                sync.Mutex
		failures          []Failure
		i                 atomic.Int64
		wg                sync.WaitGroup
	)
	kind := strings.TrimSuffix(page.Kind, "List")
	workers := min(m.opts.Concurrency, len(page.Items))
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for {
				n := int(i.Add(1)) - 1
				if n >= len(page.Items) || ctx.Err() != nil {
					return
				}
				moved, f := m.rewrite(ctx, res, page.APIVersion, kind, page.Items[n])
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
func (m *Migrator) rewrite(ctx context.Context, res Resource, apiVersion, kind string, item json.RawMessage) (moved bool, f *Failure) {
	var meta itemMeta
	if err := json.Unmarshal(item, &meta); err != nil {
		return false, &Failure{Reason: fmt.Sprintf("undecodable list item: %v", err)}
	}
	ns, name, rv := meta.Metadata.Namespace, meta.Metadata.Name, meta.Metadata.ResourceVersion
	body := withTypeMeta(item, meta, apiVersion, kind)
	var out struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	err := m.retry(ctx, func(ctx context.Context) error {
		data, err := send(ctx, m.client.Put().AbsPath(objectPath(res, ns, name)).Body(body).MaxRetries(0))
		if err != nil {
			return err
		}
		out.Metadata.ResourceVersion = ""
		return json.Unmarshal(data, &out)
	})
	switch {
	case err == nil:
		return out.Metadata.ResourceVersion != rv, nil
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		// Changed (and so re-encoded) or deleted by someone else.
		return false, nil
	case ctx.Err() != nil:
		return false, nil
	}
	klog.FromContext(ctx).V(2).Info("Object not rewritten", "namespace", ns, "name", name, "err", err)
	return false, &Failure{Namespace: ns, Name: name, Reason: failureReason(err)}
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
