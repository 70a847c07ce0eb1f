package cache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/concordproject/concord/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// namespacesPrefix is the storage prefix of namespaces, which every namespaced
// creation is checked against.
const namespacesPrefix = "core/namespaces/"

var namespacesGR = schema.GroupResource{Resource: "namespaces"}

// liveLookupTTL is how long creations in a namespace this server began deleting read
// the namespace from storage rather than the watch (Kubernetes' NamespaceLifecycle
// uses the same): long enough for any watch to deliver the deletion.
const liveLookupTTL = 30 * time.Second

// Namespaces answers "may objects be created in namespace X?" from a watch of the
// stored namespaces, and falls back to a live read on a miss (a namespace created a
// moment ago through another server). It is the lister-plus-live-lookup pattern of
// Kubernetes' NamespaceLifecycle admission.
type Namespaces struct {
	st *storage.Store

	mu     sync.RWMutex
	synced bool
	// terminating[name] is true for a namespace being deleted; absent means unknown.
	state map[string]bool
	// liveLookup[name] is when creations in a namespace this server wrote the
	// deletion of stop reading storage: until the watch has delivered the deletion,
	// the state above would still admit them.
	liveLookup map[string]time.Time
}

// NewNamespaces returns a cache of the namespaces stored in st; Run keeps it warm.
func NewNamespaces(st *storage.Store) *Namespaces {
	return &Namespaces{st: st, state: map[string]bool{}, liveLookup: map[string]time.Time{}}
}

// Wrote tells the cache that this server wrote the deletion of the object at key, so
// that, if key is a namespace's, creations in it are refused from now on rather than
// once the watch delivers the deletion.
func (c *Namespaces) Wrote(key string) {
	name, ok := strings.CutPrefix(key, namespacesPrefix)
	if !ok {
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for ns, until := range c.liveLookup {
		if now.After(until) {
			delete(c.liveLookup, ns)
		}
	}
	c.liveLookup[name] = now.Add(liveLookupTTL)
}

type nsMeta struct {
	Metadata struct {
		Name              string  `json:"name"`
		DeletionTimestamp *string `json:"deletionTimestamp"`
	} `json:"metadata"`
}

func parseNamespace(v []byte) (name string, terminating bool, err error) {
	var m nsMeta
	if err := json.Unmarshal(v, &m); err != nil {
		return "", false, err
	}
	return m.Metadata.Name, m.Metadata.DeletionTimestamp != nil, nil
}

// relistDelay is how long Run waits to list again after a watch ended.
const relistDelay = 200 * time.Millisecond

// Run lists and watches the stored namespaces until ctx is done, listing again
// relistDelay after a watch ended; it returns nil then. Until it has listed once, Admit reads storage.
func (c *Namespaces) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("namespace-cache")
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := c.syncAndWatch(ctx); err != nil && ctx.Err() == nil {
			logger.V(2).Info("Namespace watch restarting", "err", err)
		}
	}, relistDelay)
	return nil
}

func (c *Namespaces) syncAndWatch(ctx context.Context) error {
	list, err := c.st.List(ctx, namespacesPrefix, storage.ListOptions{})
	if err != nil {
		return err
	}
	state := make(map[string]bool, len(list.Items))
	for _, kv := range list.Items {
		if name, term, err := parseNamespace(kv.Value); err == nil {
			state[name] = term
		}
	}
	c.mu.Lock()
	c.state, c.synced = state, true
	c.mu.Unlock()
	for ev := range c.st.Watch(ctx, namespacesPrefix, list.Revision, storage.WatchOptions{}) {
		switch ev.Type {
		case storage.Put:
			if name, term, err := parseNamespace(ev.KV.Value); err == nil {
				c.mu.Lock()
				c.state[name] = term
				c.mu.Unlock()
			}
		case storage.Deleted:
			c.mu.Lock()
			delete(c.state, strings.TrimPrefix(ev.KV.Key, namespacesPrefix))
			c.mu.Unlock()
		case storage.Error:
			return ev.Err
		}
	}
	return ctx.Err()
}

// Admit returns nil if objects may be created in namespace ns: it exists and is not
// being deleted. Otherwise a NotFound or Forbidden Status. It reads storage for a
// namespace the watch has not shown, and for one this server lately began deleting
// (Wrote).
func (c *Namespaces) Admit(ctx context.Context, gr schema.GroupResource, ns string) error {
	c.mu.RLock()
	term, known := c.state[ns]
	if until, ok := c.liveLookup[ns]; ok && time.Now().Before(until) {
		known = false
	}
	c.mu.RUnlock()
	if !known {
		kv, err := c.st.Get(ctx, namespacesPrefix+ns)
		if errors.Is(err, storage.ErrNotFound) {
			return apierrors.NewNotFound(namespacesGR, ns)
		}
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("checking namespace %q: %w", ns, err))
		}
		if _, term, err = parseNamespace(kv.Value); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("namespace %q: %w", ns, err))
		}
	}
	if term {
		return apierrors.NewForbidden(gr, "", fmt.Errorf("namespace %s is being deleted: no new objects may be created in it", ns))
	}
	return nil
}
