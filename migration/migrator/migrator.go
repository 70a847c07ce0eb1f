package migrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/concordproject/concord/retry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
)

// Mode chooses between the server path and the client path.
type Mode string

const (
	// ModeAuto uses the server path when the server answers it, else the client path.
	ModeAuto Mode = "auto"
	// ModeClient always uses the client path.
	ModeClient Mode = "client"
	// ModeServer always uses the server path; a server without it fails the migration
	// with ErrNoServerPath.
	ModeServer Mode = "server"
)

// The values of Checkpoint.Path.
const (
	PathServer = "server"
	PathClient = "client"
)

// ErrNoServerPath means the server does not offer Concord's rewrite endpoint for the
// resource (it is not Concord, or an older one) and Options.Mode is ModeServer.
var ErrNoServerPath = errors.New("the server does not offer the rewrite endpoint")

// ErrGaveUp wraps the last error of a request that failed transiently
// Options.MaxAttempts times.
var ErrGaveUp = retry.ErrGaveUp

// ErrUnreadable means that the server could not read some stored objects of the
// resource (a list answered 500 StorageReadError): they are reported as failed objects
// by name, and the migration cannot get past them on the client path, because a
// Kubernetes list is all or nothing. The server path skips them.
var ErrUnreadable = errors.New("objects the server cannot read")

// Options tune a Migrator. Zero values take the defaults.
type Options struct {
	// Mode chooses the path (default ModeAuto).
	Mode Mode
	// Concurrency is how many objects the client path writes at once (default 8).
	Concurrency int
	// QPS limits the requests per second sent to the server, Burst at once: one per
	// object on the client path, one per page on the server path. Zero QPS means no
	// limit (the default); Burst defaults to max(1, QPS).
	QPS   float32
	Burst int
	// PageSize is the number of objects per list (client path) or rewrite call
	// (server path) (default 500).
	PageSize int64
	// MaxAttempts bounds the attempts of a request that fails transiently (default 5).
	MaxAttempts int
	// InitialBackoff and MaxBackoff bound the wait between attempts, which doubles
	// from the first to the second (defaults 100ms and 5s). A Retry-After from the
	// server wins when longer.
	InitialBackoff, MaxBackoff time.Duration
	// RequestTimeout bounds each request (default 30s).
	RequestTimeout time.Duration
	// MaxFailures is how many failures a Checkpoint keeps with their names and reasons
	// (default 100); the count goes on beyond it.
	MaxFailures int
}

func (o Options) withDefaults() Options {
	if o.Mode == "" {
		o.Mode = ModeAuto
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Burst <= 0 {
		o.Burst = max(1, int(o.QPS))
	}
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = 100 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	if o.MaxFailures <= 0 {
		o.MaxFailures = 100
	}
	return o
}

// Validate reports options that make no sense.
func (o Options) Validate() error {
	var errs []error
	switch o.Mode {
	case "", ModeAuto, ModeClient, ModeServer:
	default:
		errs = append(errs, fmt.Errorf("mode %q: want %s, %s or %s", o.Mode, ModeAuto, ModeClient, ModeServer))
	}
	if o.QPS < 0 {
		errs = append(errs, fmt.Errorf("qps %v: want 0 (no limit) or more", o.QPS))
	}
	if o.PageSize > 10000 {
		errs = append(errs, fmt.Errorf("page size %d: at most 10000", o.PageSize))
	}
	return errors.Join(errs...)
}

// ErrStorageVersionChanged means that the resource's StorageVersion object moved from
// Resource.StorageVersion during the migration: a server wrote a change of its entry
// (another release joined, or a server changed its storage version). The migration
// stopped without rewriting objects under the changed storage versions (see the
// package documentation for what each path guarantees).
var ErrStorageVersionChanged = errors.New("the resource's StorageVersion changed during the migration")

// Resource is what to migrate: the resource, in a version the server serves (objects
// are read and written back in it; the server converts to the storage version), and
// its scope.
type Resource struct {
	schema.GroupVersionResource
	Namespaced bool
	// StorageVersion, if set, is the resourceVersion of the resource's StorageVersion
	// object (internal.apiserver.k8s.io) the migration was started for. Rewrites are
	// held to it, and the migration stops with ErrStorageVersionChanged once it moved.
	StorageVersion string
}

// Counts are objects by outcome.
type Counts struct {
	// Migrated objects were written again: their resourceVersion moved.
	Migrated int64
	// Skipped objects were already encoded in the storage version, or were changed
	// or deleted by someone else meanwhile.
	Skipped int64
	// Failed objects could not be rewritten.
	Failed int64
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Migrated += o.Migrated
	c.Skipped += o.Skipped
	c.Failed += o.Failed
}

// Done returns the number of objects dealt with.
func (c Counts) Done() int64 { return c.Migrated + c.Skipped + c.Failed }

// Failure is an object that could not be rewritten.
type Failure struct {
	Namespace, Name, Reason string
}

// Checkpoint is how far a migration got.
type Checkpoint struct {
	// Path is the path of the pages done: "" until a first page is written whole
	// (the counts may hold part of one), PathServer or PathClient after.
	Path string
	// Continue is where the next page starts; "" with Path set means done.
	Continue string
	// ResourceVersion is the resourceVersion of the collection when the migration
	// started.
	ResourceVersion string
	// Total is the number of objects when the migration started, as the server
	// estimated it (nil if it did not say).
	Total *int64
	Counts
	// Failures are the first Options.MaxFailures failures.
	Failures []Failure
}

// Finished reports whether cp is the checkpoint of a completed migration.
func (cp Checkpoint) Finished() bool { return cp.Path != "" && cp.Continue == "" }

// Remaining returns the objects of Total not yet dealt with (0 if unknown or below).
func (cp Checkpoint) Remaining() int64 {
	if cp.Total == nil {
		return 0
	}
	return max(0, *cp.Total-cp.Done())
}

// PageReport is what Migrate reports after each page.
type PageReport struct {
	// Checkpoint is the state after the page.
	Checkpoint Checkpoint
	// Page counts the objects of this page.
	Page Counts
	// Failures are this page's failures, all of them.
	Failures []Failure
}

// ReportFunc receives the report of each page; an error stops the migration, and
// Migrate returns it.
type ReportFunc func(context.Context, PageReport) error

// http1MaxWorkers is the most workers the client path gives a connection each: as
// many idle connections as client-go's transport keeps per host. More workers share
// HTTP/2 connections instead, which no pool size limits.
const http1MaxWorkers = 25

// Migrator rewrites resources through one API server connection. It is safe for
// concurrent use by several migrations.
type Migrator struct {
	client *rest.RESTClient
	opts   Options
}

// New returns a Migrator talking to the server of cfg. Its requests are limited by
// opts.QPS, not by cfg's.
func New(cfg *rest.Config, opts Options) (*Migrator, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	c := rest.CopyConfig(cfg)
	c.APIPath = "/"
	c.GroupVersion = &schema.GroupVersion{}
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c.ContentType = "application/json"
	c.AcceptContentTypes = "application/json"
	if opts.Concurrency <= http1MaxWorkers {
		// One HTTP/1.1 connection per worker: a request and its answer cross fewer
		// goroutines on both ends than on a multiplexed HTTP/2 connection, which
		// shortens every write (measured on the client path: +15% objects per second at
		// concurrency 1, see docs/benchmarks.md).
		c.NextProtos = []string{"http/1.1"}
	}
	if opts.QPS > 0 {
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(opts.QPS, opts.Burst)
	} else {
		c.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	}
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("migrator client: %w", err)
	}
	return &Migrator{client: client, opts: opts}, nil
}

// Options returns the options in force, defaults filled in.
func (m *Migrator) Options() Options { return m.opts }

// Migrate rewrites every object of res, starting after from (the zero Checkpoint
// starts from the beginning; a finished one returns at once), and calls report after
// each page. It returns the last checkpoint: finished when every page was done, else
// with the error that stopped it (the context's, report's, or a page that could not be
// read or rewritten after retries). Failed objects do not stop it; they are counted.
func (m *Migrator) Migrate(ctx context.Context, res Resource, from Checkpoint, report ReportFunc) (Checkpoint, error) {
	cp := from
	cp.Failures = slices.Clone(from.Failures)
	if cp.Finished() {
		return cp, nil
	}
	logger := klog.FromContext(ctx).WithValues("resource", res.String())
	ctx = klog.NewContext(ctx, logger)
	// A migration is a burst of requests: the connections it opened are not left idle
	// after it (one a worker dialled and never used would hold up the server's graceful
	// shutdown for seconds).
	defer utilnet.CloseIdleConnectionsFor(m.client.Client.Transport)
	if m.opts.Mode != ModeClient && cp.Path != PathClient {
		next, ok, err := m.serverPath(ctx, res, cp, report)
		if ok || err != nil {
			return next, err
		}
		if m.opts.Mode == ModeServer {
			return cp, fmt.Errorf("%w for %s", ErrNoServerPath, res.GroupResource())
		}
		if cp.Path == PathServer {
			logger.Info("The rewrite endpoint is gone; starting over on the client path")
			cp.Path, cp.Continue = "", ""
		}
	}
	// The client path counts the objects first (the server path learns the total
	// from its first page, and must not make the server list the resource: a list
	// would have it cache every object).
	if cp.Total == nil && cp.Path == "" {
		total, rv, err := m.count(ctx, res)
		switch {
		case apierrors.IsStoreReadError(err):
			// The total stays unknown; the pages say which objects cannot be read.
			logger.Info("Some stored objects cannot be read", "err", err)
		case err != nil:
			return cp, err
		default:
			cp.Total, cp.ResourceVersion = total, rv
		}
	}
	return m.clientPath(ctx, res, cp, report)
}

// unreadable returns err, the error of a list. If it is a StorageReadError, it first
// reports the objects it names as failed (cp stays where it was: the page was not
// read) and wraps ErrUnreadable.
func (m *Migrator) unreadable(ctx context.Context, cp *Checkpoint, res Resource, err error, report ReportFunc) error {
	var st apierrors.APIStatus
	if !apierrors.IsStoreReadError(err) || !errors.As(err, &st) || st.Status().Details == nil {
		return err
	}
	var failures []Failure
	for _, c := range st.Status().Details.Causes {
		if c.Field == "" {
			continue
		}
		parts := strings.Split(c.Field, "/")
		f := Failure{Name: parts[len(parts)-1], Reason: "the server cannot read it: " + c.Message}
		if res.Namespaced && len(parts) >= 2 {
			f.Namespace = parts[len(parts)-2]
		}
		failures = append(failures, f)
	}
	if len(failures) == 0 {
		return err
	}
	if rerr := m.apply(ctx, cp, cp.Path, cp.Continue, Counts{Failed: int64(len(failures))}, failures, report); rerr != nil {
		return rerr
	}
	return fmt.Errorf("listing %s: %d %w: %w", res.GroupResource(), len(failures), ErrUnreadable, err)
}

// apply adds a page's results to cp and reports them.
func (m *Migrator) apply(ctx context.Context, cp *Checkpoint, path, next string, page Counts, failures []Failure, report ReportFunc) error {
	slices.SortFunc(failures, func(a, b Failure) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	cp.Path, cp.Continue = path, next
	cp.Add(page)
	for _, f := range failures {
		if len(cp.Failures) >= m.opts.MaxFailures {
			break
		}
		cp.Failures = append(cp.Failures, f)
	}
	klog.FromContext(ctx).V(4).Info("Page done", "path", path, "migrated", page.Migrated, "skipped", page.Skipped, "failed", page.Failed, "more", next != "")
	if report == nil {
		return nil
	}
	return report(ctx, PageReport{Checkpoint: *cp, Page: page, Failures: failures})
}
