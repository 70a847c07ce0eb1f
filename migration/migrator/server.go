package migrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/concordproject/concord/wire"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// serverPath migrates with the rewrite endpoint. ok is false, with no error, if the
// server answered the first call as a server without the endpoint does (404, 403,
// 405): the caller then takes the client path. With res.StorageVersion set, each call
// asks the server to hold its writes to it; a server that does not say it did (an
// older Concord) has the StorageVersion checked before each call instead, as on the
// client path.
func (m *Migrator) serverPath(ctx context.Context, res Resource, cp Checkpoint, report ReportFunc) (_ Checkpoint, ok bool, err error) {
	logger := klog.FromContext(ctx)
	first, guarded := true, false
	for {
		if !first && !guarded {
			if err := m.checkStorageVersion(ctx, res); err != nil {
				return cp, true, err
			}
		}
		token := cp.Continue
		r, err := m.serverRewrite(ctx, res, token)
		if first && unavailable(err) {
			logger.V(2).Info("No server-side rewrite; using the client path", "answer", err)
			return cp, false, nil
		}
		if first && err == nil && res.StorageVersion != "" {
			if guarded = r.StorageVersionResourceVersion == res.StorageVersion; !guarded {
				logger.Info("The server does not hold its rewrites to the StorageVersion; checking it before each page")
			}
		}
		first = false
		if err != nil {
			return cp, true, fmt.Errorf("rewriting %s on the server: %w", res.GroupResource(), err)
		}
		if token == "" && cp.Total == nil && r.Remaining != nil {
			total := int64(r.Scanned) + *r.Remaining
			cp.Total, cp.ResourceVersion = &total, r.ResourceVersion
		}
		page, failures := pageOf(r)
		path, next := PathServer, r.Continue
		if r.StorageVersionChanged {
			// The page was not written whole: the checkpoint stays before it. Before the
			// first page that is the start, whose path stays unset: a path with no
			// continue token is a finished migration.
			path, next = cp.Path, token
		}
		if err := m.apply(ctx, &cp, path, next, page, failures, report); err != nil {
			return cp, true, err
		}
		if r.StorageVersionChanged {
			return cp, true, storageVersionChanged(wire.StorageVersionName(res.GroupResource()), res.StorageVersion, "")
		}
		if r.Continue == "" {
			logger.V(2).Info("Server-side migration done", "migrated", cp.Migrated, "skipped", cp.Skipped, "failed", cp.Failed)
			return cp, true, nil
		}
	}
}

// pageOf returns the counts and failures of a rewrite's page.
func pageOf(r *wire.RewriteResult) (Counts, []Failure) {
	page := Counts{Migrated: int64(r.Rewritten), Skipped: int64(r.Skipped), Failed: int64(len(r.Failed))}
	failures := make([]Failure, 0, len(r.Failed))
	for _, f := range r.Failed {
		failures = append(failures, Failure{Namespace: f.Namespace, Name: f.Name, Reason: f.Reason})
	}
	return page, failures
}

// serverRewrite asks the server to rewrite the page after token, with retries.
func (m *Migrator) serverRewrite(ctx context.Context, res Resource, token string) (*wire.RewriteResult, error) {
	out := &wire.RewriteResult{}
	err := m.retry(ctx, func(ctx context.Context) error {
		req := m.client.Post().AbsPath(wire.RewriteURL(res.GroupResource())).
			Param("limit", strconv.FormatInt(m.opts.PageSize, 10)).MaxRetries(0)
		if token != "" {
			req = req.Param("continue", token)
		}
		if res.StorageVersion != "" {
			req = req.Param(wire.RewriteStorageVersionParam, res.StorageVersion)
		}
		data, err := send(ctx, req)
		if err != nil {
			return err
		}
		*out = wire.RewriteResult{}
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("decoding the rewrite result: %w", err)
		}
		return nil
	})
	return out, err
}

// unavailable reports whether err is how a server without the rewrite endpoint (or
// one that does not let this user call it, or does not rewrite this resource)
// answers.
func unavailable(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	switch st.Status().Code {
	case http.StatusNotFound, http.StatusForbidden, http.StatusMethodNotAllowed:
		return true
	}
	return false
}
