package migrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"

	"github.com/concordproject/concord/retry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// collectionPath returns the URL path of res across all namespaces.
func collectionPath(res Resource) string {
	if res.Group == "" {
		return path.Join("/api", res.Version, res.Resource)
	}
	return path.Join("/apis", res.Group, res.Version, res.Resource)
}

// objectPath returns the URL path of one object of res.
func objectPath(res Resource, namespace, name string) string {
	prefix := "/apis/" + res.Group + "/" + res.Version
	if res.Group == "" {
		prefix = "/api/" + res.Version
	}
	if res.Namespaced {
		return prefix + "/namespaces/" + namespace + "/" + res.Resource + "/" + name
	}
	return prefix + "/" + res.Resource + "/" + name
}

// retry runs do until it succeeds, fails permanently, or has failed transiently
// Options.MaxAttempts times (then the error wraps ErrGaveUp), through the one retry
// helper: waits doubling from Options.InitialBackoff to Options.MaxBackoff, or what
// the server asks; each attempt gets Options.RequestTimeout.
func (m *Migrator) retry(ctx context.Context, do func(context.Context) error) error {
	return retry.Do(ctx, retry.Policy{
		Backoff:        wait.Backoff{Duration: m.opts.InitialBackoff, Factor: 2, Steps: m.opts.MaxAttempts, Cap: m.opts.MaxBackoff},
		Retriable:      retry.Transient,
		AttemptTimeout: m.opts.RequestTimeout,
	}, do)
}

// send sends req and returns the body of a successful answer, or an error carrying
// the server's Status when it sent one.
func send(ctx context.Context, req *rest.Request) ([]byte, error) {
	res := req.Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err
	}
	return res.Raw()
}

// listPage is one page of a list, items left undecoded.
type listPage struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		ResourceVersion    string `json:"resourceVersion"`
		Continue           string `json:"continue"`
		RemainingItemCount *int64 `json:"remainingItemCount"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// list reads one page of res after token, with retries.
func (m *Migrator) list(ctx context.Context, res Resource, token string, limit int64) (*listPage, error) {
	page := &listPage{}
	err := m.retry(ctx, func(ctx context.Context) error {
		req := m.client.Get().AbsPath(collectionPath(res)).Param("limit", strconv.FormatInt(limit, 10)).MaxRetries(0)
		if token != "" {
			req = req.Param("continue", token)
		}
		data, err := send(ctx, req)
		if err != nil {
			return err
		}
		*page = listPage{}
		if err := json.Unmarshal(data, page); err != nil {
			return fmt.Errorf("decoding the list of %s: %w", res.GroupResource(), err)
		}
		return nil
	})
	return page, err
}

// count returns the number of objects of res (nil if the server does not say) and
// the collection's resourceVersion.
func (m *Migrator) count(ctx context.Context, res Resource) (*int64, string, error) {
	page, err := m.list(ctx, res, "", 1)
	if err != nil {
		return nil, "", fmt.Errorf("counting %s: %w", res.GroupResource(), err)
	}
	n := int64(len(page.Items))
	switch {
	case page.Metadata.RemainingItemCount != nil:
		n += *page.Metadata.RemainingItemCount
	case page.Metadata.Continue != "":
		return nil, page.Metadata.ResourceVersion, nil
	}
	return &n, page.Metadata.ResourceVersion, nil
}

// failureReason is the text reported for an object that failed with err.
func failureReason(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Message != "" {
		s := st.Status()
		msg := s.Message
		if errors.Is(err, ErrGaveUp) {
			msg = err.Error()
		}
		if s.Code != 0 {
			return fmt.Sprintf("%d %s: %s", s.Code, s.Reason, msg)
		}
		return msg
	}
	return err.Error()
}
