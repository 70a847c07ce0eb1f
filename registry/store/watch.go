package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/registry/watchcache"
	"github.com/concordproject/concord/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// InitialEventsAnnotation marks the bookmark that ends the initial events of a
// WatchList (sendInitialEvents=true).
const InitialEventsAnnotation = metav1.InitialEventsAnnotationKey

// Watch streams changes of res objects in namespace ns ("" for all) matching the
// selectors of opts, converted to version, as watch events:
//
//   - resourceVersion N: every change after N (410 Expired, as an ERROR event, if N
//     was compacted);
//   - resourceVersion "" or "0": an ADDED event for every existing object, then changes;
//   - sendInitialEvents=true with resourceVersionMatch=NotOlderThan (WatchList): the
//     ADDED events of a state at least as new as N, then a BOOKMARK annotated
//     k8s.io/initial-events-end, then changes;
//   - allowWatchBookmarks: BOOKMARK events carry the current revision while idle.
//
// An object that stops matching the selectors is sent as DELETED, one that starts to
// match as ADDED. The watch ends when ctx is done or Stop is called.
func (s *Store) Watch(ctx context.Context, ref Ref, opts metav1.ListOptions) (watch.Interface, error) {
	return s.watchChan(ctx, ref, opts, nil, false)
}

// WatchStorage is Watch served by etcd alone, never by the resource's watch cache,
// which it does not start: its starting state is read from etcd a page at a time and
// its changes come from a watch of etcd's history (handed to the shared cache, like
// any watch older than the cache's history, if one already runs). For a watcher that
// follows a resource nobody else reads, so that the server does not keep every object
// of it in memory for that watcher's sake.
func (s *Store) WatchStorage(ctx context.Context, ref Ref, opts metav1.ListOptions) (watch.Interface, error) {
	return s.watchChan(ctx, ref, opts, nil, true)
}

// WatchEncoded is Watch whose starting state, when the resource's cache holds it, is
// sent as EncodedObjects encoded by enc, sharing the encodings kept for lists: the
// initial events of an informer's WatchList cost a copy per object, as its list
// would, not a decoding, conversion and encoding per watch. Changes are sent as by
// Watch.
func (s *Store) WatchEncoded(ctx context.Context, ref Ref, opts metav1.ListOptions, enc ItemEncoder) (watch.Interface, error) {
	return s.watchChan(ctx, ref, opts, &enc, false)
}

// Sink takes the events of a Stream, in the goroutine that runs it.
type Sink interface {
	// Send takes an event; false ends the watch.
	Send(watch.Event) bool
	// Flush is called before the watch waits (for changes, or for etcd): what Send
	// kept goes out now. False ends the watch.
	Flush() bool
}

// Stream is a watch that its reader runs: Run hands the events to a Sink in the
// reader's own goroutine, with no goroutine or channel between the watch and its
// reader. A server sends each event to its client this way.
type Stream struct {
	w     *watcher
	start func(ctx context.Context, out Sink)
	ctx   context.Context
}

// Stream is Watch, or WatchEncoded with enc, as a Stream. The watch starts as Watch's
// does (errors are returned here); its events flow once Run is called, and its
// Sink's flushes are paced by the store's WatchFlushInterval.
func (s *Store) Stream(ctx context.Context, ref Ref, opts metav1.ListOptions, enc *ItemEncoder) (*Stream, error) {
	w, wctx, start, err := s.watch(ctx, ref, opts, enc, false)
	if err != nil {
		return nil, err
	}
	w.flushInterval = s.WatchFlushInterval
	return &Stream{w: w, start: start, ctx: wctx}, nil
}

// Run sends the watch's events to out until the watch ends: its context is done (out
// is to refuse events from then on: the watch checks its context only while it
// waits), Stop is called, out refuses an event, or the watch fails (its last event is
// then the Error event). Call it once.
func (st *Stream) Run(out Sink) { st.start(st.ctx, out) }

// Stop ends the watch.
func (st *Stream) Stop() { st.w.cancel() }

// watchChan starts a watch whose events its own goroutine sends to ResultChan.
func (s *Store) watchChan(ctx context.Context, ref Ref, opts metav1.ListOptions, enc *ItemEncoder, fromStorage bool) (watch.Interface, error) {
	w, wctx, start, err := s.watch(ctx, ref, opts, enc, fromStorage)
	if err != nil {
		return nil, err
	}
	w.result = make(chan watch.Event, 64)
	go func() {
		defer close(w.result)
		start(wctx, chanSink{wctx, w.result})
	}()
	return w, nil
}

// chanSink sends events to a channel.
type chanSink struct {
	ctx context.Context
	ch  chan<- watch.Event
}

func (c chanSink) Send(e watch.Event) bool {
	select {
	case c.ch <- e:
		return true
	default:
	}
	select {
	case c.ch <- e:
		return true
	case <-c.ctx.Done():
		return false
	}
}

func (chanSink) Flush() bool { return true }

// EncodedObject is the object of an initial event of WatchEncoded, in the format of
// its ItemEncoder: what a list item of the object is.
type EncodedObject struct {
	Raw []byte
}

// GetObjectKind has no kind to give: the watch's resource and version say it.
func (o *EncodedObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject copies the encoding.
func (o *EncodedObject) DeepCopyObject() runtime.Object {
	return &EncodedObject{Raw: append([]byte(nil), o.Raw...)}
}

// watch prepares a watch and returns its watcher, its context, and what runs it.
func (s *Store) watch(ctx context.Context, ref Ref, opts metav1.ListOptions, enc *ItemEncoder,
	fromStorage bool) (*watcher, context.Context, func(context.Context, Sink), error) {
	res, version, ns := ref.Resource, ref.Version, ref.Namespace
	pred, err := registry.NewPredicate(res, version, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := validateWatchOptions(res, opts); err != nil {
		return nil, nil, nil, err
	}
	var initial bool
	var from int64
	// at is the state the watch starts from when it reads one: resourceVersion ""
	// the current state (consistent), "0" any, N one at least as new as N.
	at := listStart{consistent: opts.ResourceVersion == ""}
	switch {
	case opts.SendInitialEvents != nil:
		initial = *opts.SendInitialEvents
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			if from, err = parseRV(res.GroupResource(), opts.ResourceVersion); err != nil {
				return nil, nil, nil, err
			}
		}
	case opts.ResourceVersion == "" || opts.ResourceVersion == "0":
		initial = true
	default:
		if from, err = parseRV(res.GroupResource(), opts.ResourceVersion); err != nil {
			return nil, nil, nil, err
		}
	}
	at.minRV = from

	wctx, cancel := context.WithCancel(ctx)
	w := &watcher{
		store: s, res: res, version: version, pred: pred, cancel: cancel, keys: newMemoKeys(res, version),
		bookmarks:   opts.AllowWatchBookmarks,
		enc:         enc,
		fromStorage: fromStorage,
	}
	var list *startState
	if initial || (opts.SendInitialEvents != nil && from == 0) {
		// Read the starting state now, so that errors are returned to the caller.
		if fromStorage {
			s.caches.Observe(res.Prefix(""), "watch", false)
			list, err = s.readState(ctx, res, ns, at.minRV)
		} else {
			list, err = s.initialState(ctx, res, ns, at)
		}
		if err != nil {
			cancel()
			return nil, nil, nil, err
		}
		if !initial {
			list.kvs, list.entries, list.next = nil, nil, "" // sendInitialEvents=false: only the starting revision matters
		}
		from = list.rev
	}
	endBookmark := opts.SendInitialEvents != nil && initial
	return w, wctx, func(ctx context.Context, out Sink) {
		w.out = out
		w.run(ctx, ns, from, list, endBookmark)
	}, nil
}

func validateWatchOptions(res *registry.Resource, opts metav1.ListOptions) error {
	if opts.SendInitialEvents != nil {
		if opts.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan {
			return apierrors.NewInvalid(res.GroupKind(), "", fieldErrs("resourceVersionMatch", opts.ResourceVersionMatch,
				"sendInitialEvents requires resourceVersionMatch=NotOlderThan"))
		}
		if !opts.AllowWatchBookmarks && *opts.SendInitialEvents {
			return apierrors.NewInvalid(res.GroupKind(), "", fieldErrs("allowWatchBookmarks", opts.AllowWatchBookmarks,
				"sendInitialEvents requires allowWatchBookmarks=true"))
		}
	} else if opts.ResourceVersionMatch != "" {
		return apierrors.NewInvalid(res.GroupKind(), "", fieldErrs("resourceVersionMatch", opts.ResourceVersionMatch,
			"resourceVersionMatch is forbidden for watch unless sendInitialEvents is set"))
	}
	return nil
}

// startState is the state a watch starts from: the stored key/values under the
// watched prefix at revision rev, decoded, filtered and converted as they are sent;
// read from a cache's snapshot (entries, of cache) or from etcd, a page at a time
// (kvs, then the pages after next).
type startState struct {
	kvs     []*storage.KeyValue
	entries []*watchcache.Entry
	cache   *watchcache.Cache
	rev     int64
	// prefix and next are where the following page of an etcd read starts; next ""
	// once the last page is read.
	prefix, next string
}

// readState reads the first page of the key/values under ns's prefix from etcd at the
// current revision (at least minRV); sendInitial reads the others as it sends, so a
// watch of a large resource holds one page of it at a time.
func (s *Store) readState(ctx context.Context, res *registry.Resource, ns string, minRV int64) (*startState, error) {
	st := &startState{prefix: res.Prefix(ns)}
	if err := s.readStatePage(ctx, st, statePage); err != nil {
		return nil, s.storageError(res, "", err)
	}
	if err := checkNotTooNew(minRV, st.rev); err != nil {
		return nil, err
	}
	return st, nil
}

// Pages of a watch's starting state read from etcd: the first of statePage objects,
// the others sized from the values read so far to hold about statePageBytes, within
// [statePage, maxStatePage]. They are uncounted (storage.ListOptions.Uncounted): etcd
// would otherwise count every key after a page's start to answer it.
const (
	statePage      = 500
	maxStatePage   = 10000
	statePageBytes = 4 << 20
)

// readStatePage reads the page of st's state after st.next, of at most limit objects,
// into st.kvs, at st.rev (the current revision for the first page).
func (s *Store) readStatePage(ctx context.Context, st *startState, limit int64) error {
	page, err := s.storage.List(ctx, st.prefix, storage.ListOptions{Revision: st.rev, Limit: limit, Start: st.next, Uncounted: true})
	if err != nil {
		return err
	}
	if st.rev == 0 {
		st.rev = page.Revision
	}
	st.kvs, st.next = page.Items, ""
	if page.More && len(page.Items) > 0 {
		st.next = page.Items[len(page.Items)-1].Key + "\x00"
	}
	return nil
}

// nextStatePage is the size of the page after kvs.
func nextStatePage(kvs []*storage.KeyValue) int64 {
	var size int
	for _, kv := range kvs {
		size += len(kv.Key) + len(kv.Value)
	}
	if size == 0 {
		return statePage
	}
	return min(max(int64(statePageBytes*len(kvs)/size), statePage), maxStatePage)
}

type watcher struct {
	store   *Store
	res     *registry.Resource
	version string
	pred    *registry.Predicate
	keys    memoKeys
	cancel  context.CancelFunc
	// out takes the events; result is ResultChan's, when a goroutine of the watch's
	// own sends them there.
	out       Sink
	result    chan watch.Event
	bookmarks bool
	enc       *ItemEncoder // WatchEncoded's
	// fromStorage: WatchStorage's, whose changes come from a watch of etcd.
	fromStorage bool
	// flushInterval: a Stream's, the store's WatchFlushInterval.
	flushInterval time.Duration
}

func (w *watcher) ResultChan() <-chan watch.Event { return w.result }
func (w *watcher) Stop()                          { w.cancel() }

func (w *watcher) bookmark(rev int64, initialEnd bool) *registry.Object {
	o := &registry.Object{Object: map[string]interface{}{}}
	o.SetAPIVersion(w.res.APIVersion(w.version))
	o.SetKind(w.res.Names.Kind)
	o.SetResourceVersion(strconv.FormatInt(rev, 10))
	if initialEnd {
		o.SetAnnotations(map[string]string{InitialEventsAnnotation: "true"})
	}
	return o
}

// fail sends err as the watch's last event, an Error event; a watch whose context
// is done ends without one (its reader is gone, or ended it).
func (w *watcher) fail(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		err = apierrors.NewInternalError(err)
		errors.As(err, &st)
	}
	status := st.Status()
	w.out.Send(watch.Event{Type: watch.Error, Object: &status})
}

// initialChunk is how many objects of a watch's starting state are decoded and
// converted at a time: a watch of a large state holds no more than that many decoded
// objects, however many watches start at once.
const initialChunk = 256

// sendInitial sends the matching objects of a starting state as ADDED events, and
// reports whether the watch goes on.
func (w *watcher) sendInitial(ctx context.Context, st *startState) bool {
	if w.enc != nil && st.entries != nil {
		return w.sendInitialEncoded(ctx, st)
	}
	kvs := st.kvs
	if st.entries != nil {
		kvs = make([]*storage.KeyValue, len(st.entries))
		for i, e := range st.entries {
			kvs[i] = e.KeyValue
		}
	}
	for len(kvs) > 0 || st.next != "" {
		if len(kvs) == 0 {
			if !w.out.Flush() {
				return false
			}
			if err := w.store.readStatePage(ctx, st, nextStatePage(st.kvs)); err != nil {
				w.fail(ctx, w.store.storageError(w.res, "", err))
				return false
			}
			kvs = st.kvs
			continue
		}
		chunk := kvs[:min(initialChunk, len(kvs))]
		kvs = kvs[len(chunk):]
		objs := make([]*registry.Object, 0, len(chunk))
		for _, kv := range chunk {
			obj, err := w.res.Decode(kv.Value, kv.Revision)
			if err != nil {
				w.fail(ctx, w.store.internalError(w.res, err))
				return false
			}
			if w.pred.Matches(obj) {
				objs = append(objs, obj)
			}
		}
		if err := w.res.Convert(ctx, objs, w.version); err != nil {
			w.fail(ctx, w.store.conversionError(w.res, err))
			return false
		}
		for _, o := range objs {
			w.res.Schema(w.version).DefaultStored(o.Object)
			if !w.out.Send(watch.Event{Type: watch.Added, Object: o}) {
				return false
			}
		}
	}
	return true
}

// sendInitialEncoded sends a cached starting state as a list of it would be answered,
// a chunk at a time: the encodings kept for lists, the others made and kept now.
func (w *watcher) sendInitialEncoded(ctx context.Context, st *startState) bool {
	ref := Ref{Resource: w.res, Version: w.version}
	for entries := st.entries; len(entries) > 0; {
		chunk := entries[:min(initialChunk, len(entries))]
		entries = entries[len(chunk):]
		var sel selection
		for _, e := range chunk {
			var obj *registry.Object
			if !w.pred.Empty() {
				var err error
				if obj, err = w.res.Decode(e.Value, e.Revision); err != nil {
					w.fail(ctx, w.store.internalError(w.res, err))
					return false
				}
				if !w.pred.Matches(obj) {
					continue
				}
			}
			sel.entries, sel.objs = append(sel.entries, e), append(sel.objs, obj)
		}
		items, err := w.store.encodeEntries(ctx, ref, *w.enc, st.cache, sel)
		if errors.Is(err, errUnreadable) {
			err = w.store.internalError(w.res, err)
		}
		if err != nil {
			w.fail(ctx, err)
			return false
		}
		for _, raw := range items {
			if !w.out.Send(watch.Event{Type: watch.Added, Object: &EncodedObject{Raw: raw}}) {
				return false
			}
		}
	}
	return true
}

func (w *watcher) run(ctx context.Context, ns string, from int64, initial *startState, endBookmark bool) {
	defer w.cancel()
	logger := klog.FromContext(ctx)
	if initial != nil {
		if !w.sendInitial(ctx, initial) {
			return
		}
		if endBookmark && !w.out.Send(watch.Event{Type: watch.Bookmark, Object: w.bookmark(initial.rev, true)}) {
			return
		}
		if !w.out.Flush() {
			return
		}
	}
	if from == 0 {
		// Every watch starts at a definite revision, so that shared history is exact.
		rev, err := w.store.storage.CurrentRevision(ctx)
		if err != nil {
			w.fail(ctx, w.store.storageError(w.res, "", err))
			return
		}
		from = rev
	}
	var queue *watchcache.Watcher
	if w.fromStorage {
		w.store.caches.Observe(w.res.Prefix(""), "watch", false)
		queue = w.store.caches.Private(ctx, w.res.Prefix(""), from, w.store.BookmarkInterval)
	} else {
		queue = w.store.subscribe(ctx, w.res, from)
	}
	defer queue.Stop()
	nsPrefix := w.res.Prefix(ns)
	pace := flushPacer{out: w.out, interval: w.flushInterval}
	defer pace.stop()
	for {
		batch, ok := pace.next(ctx, queue)
		if !ok {
			return // ctx done, or the queue ended (too slow): the client watches again
		}
		for _, ev := range batch {
			var out watch.Event
			switch ev.Type {
			case storage.Error:
				if errors.Is(ev.Err, storage.ErrCompacted) {
					w.fail(ctx, apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", from, ev.Rev)))
				} else {
					logger.V(2).Info("Watch ended by storage", "resource", w.res.GroupResource(), "err", ev.Err)
					w.fail(ctx, w.store.storageError(w.res, "", ev.Err))
				}
				return
			case storage.Progress:
				if !w.bookmarks {
					continue
				}
				out = watch.Event{Type: watch.Bookmark, Object: w.bookmark(ev.Rev, false)}
			default:
				if !strings.HasPrefix(ev.KV.Key, nsPrefix) || w.store.sameMeaning(ctx, ev, w.res) {
					continue
				}
				typ, prev, ok, err := w.translate(ev)
				if err != nil {
					w.fail(ctx, err)
					return
				}
				if !ok {
					continue
				}
				obj, err := w.view(ctx, ev, prev)
				if err != nil {
					w.fail(ctx, err)
					return
				}
				out = watch.Event{Type: typ, Object: obj}
			}
			if !pace.send(out) {
				return
			}
		}
	}
}

// translate says which watch event a change is to this watcher's selectors, and
// whether it carries the object before the change (prev) or after it. Without
// selectors it need not decode the change: view does, once for every watcher.
func (w *watcher) translate(ev *watchcache.Event) (typ watch.EventType, prev, ok bool, err error) {
	if w.pred.Empty() {
		switch {
		case ev.Type == storage.Put && ev.Prev != nil:
			return watch.Modified, false, true, nil
		case ev.Type == storage.Put:
			return watch.Added, false, true, nil
		case ev.Prev != nil:
			return watch.Deleted, true, true, nil
		}
		return "", false, false, nil
	}
	var curObj, prevObj *registry.Object
	if ev.Type == storage.Put {
		if curObj, err = decodedObject(ev, w.keys.decoded[0], w.res, false); err != nil {
			return "", false, false, w.store.internalError(w.res, err)
		}
	}
	if ev.Prev != nil {
		if prevObj, err = decodedObject(ev, w.keys.decoded[1], w.res, true); err != nil {
			return "", false, false, w.store.internalError(w.res, err)
		}
	}
	curOK := curObj != nil && w.pred.Matches(curObj)
	prevOK := prevObj != nil && w.pred.Matches(prevObj)
	switch {
	case curOK && prevOK:
		return watch.Modified, false, true, nil
	case curOK:
		return watch.Added, false, true, nil
	case prevOK:
		// Gone, or no longer selected: the last state, at the revision of the change.
		return watch.Deleted, true, true, nil
	}
	return "", false, false, nil
}

// viewKey keys, in an event's memo, its object converted to a version.
type viewKey struct {
	res     *registry.Resource
	version string
	prev    bool
}

// memoKeys are a watcher's keys in the memo of the events it reads, boxed once so
// that looking them up allocates nothing: index 0 after a change, 1 before it.
type memoKeys struct {
	decoded, view [2]any
}

func newMemoKeys(res *registry.Resource, version string) memoKeys {
	return memoKeys{
		decoded: [2]any{decodedKey{res, false}, decodedKey{res, true}},
		view:    [2]any{viewKey{res, version, false}, viewKey{res, version, true}},
	}
}

// view returns the object of a change (prev: before it) in the watcher's version with
// defaults applied, converted once per event and version for every watcher reading
// it at the time (the event holds it weakly): every one of them sends the same
// SharedObject, and so shares its encodings.
func (w *watcher) view(ctx context.Context, ev *watchcache.Event, prev bool) (*SharedObject, error) {
	i := 0
	if prev {
		i = 1
	}
	return watchcache.MemoWeak(ev, w.keys.view[i], func() (*SharedObject, error) {
		o, err := decodedObject(ev, w.keys.decoded[i], w.res, prev)
		if err != nil {
			return nil, w.store.internalError(w.res, err)
		}
		sch := w.res.Schema(w.version)
		if o.GetAPIVersion() == w.res.APIVersion(w.version) && !sch.DefaultsStored() {
			return &SharedObject{Unstructured: o}, nil // the decoded object is the view already: shared, as both are read only
		}
		o = o.DeepCopy()
		if err := w.res.Convert(context.WithoutCancel(ctx), []*registry.Object{o}, w.version); err != nil {
			return nil, w.store.conversionError(w.res, err)
		}
		sch.DefaultStored(o.Object)
		return &SharedObject{Unstructured: o}, nil
	})
}

// SharedObject is the object of a watch event, shared by every watch that sends the
// same change in the same version: read it, never modify it (DeepCopy gives a private
// copy). Encoded keeps its encodings, so that a change is encoded once per
// representation however many watchers send it, for as long as one of them holds it.
type SharedObject struct {
	*unstructured.Unstructured
	mu        sync.Mutex
	encodings []*encoding
}

// encoding is one representation of a SharedObject, made once.
type encoding struct {
	format string
	once   sync.Once
	raw    []byte
	err    error
}

// Encoded returns encode's result for the object, computed once per format.
func (o *SharedObject) Encoded(format string, encode func(*unstructured.Unstructured) ([]byte, error)) ([]byte, error) {
	o.mu.Lock()
	var e *encoding
	for _, have := range o.encodings {
		if have.format == format {
			e = have
			break
		}
	}
	if e == nil {
		e = &encoding{format: format}
		o.encodings = append(o.encodings, e)
	}
	o.mu.Unlock()
	e.once.Do(func() { e.raw, e.err = encode(o.Unstructured) })
	return e.raw, e.err
}

// Private returns the unstructured object of a watch event's object, copied if it
// is shared.
func Private(obj runtime.Object) runtime.Object {
	if o, ok := obj.(*SharedObject); ok {
		return o.DeepCopy()
	}
	return obj
}

var _ runtime.Object = (*registry.Object)(nil)
