package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	"gopkg.in/natefinch/lumberjack.v2"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	auditlib "k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/util/webhook"
	pluginbuffered "k8s.io/apiserver/plugin/pkg/audit/buffered"
	pluginlog "k8s.io/apiserver/plugin/pkg/audit/log"
	pluginwebhook "k8s.io/apiserver/plugin/pkg/audit/webhook"
	"k8s.io/klog/v2"
)

var (
	// ErrPolicy means the policy file could not be read or is not a valid
	// audit.k8s.io/v1 Policy with at least one rule.
	ErrPolicy = errors.New("audit policy")
	// ErrBackend means a backend could not be set up: the log file cannot be created,
	// or the webhook's kubeconfig is unreadable or invalid.
	ErrBackend = errors.New("audit backend")
	// ErrAlreadyRun is returned by a second call of Run: an Auditor runs once.
	ErrAlreadyRun = errors.New("the auditor has already run")
)

// Auditor audits the requests its Filter wraps, to its backends, as its policy says.
// Its methods may be called on a nil *Auditor, which audits nothing.
type Auditor struct {
	// evaluator is the policy; nil when auditing is off.
	evaluator auditlib.PolicyRuleEvaluator
	// backend is the union of the backends; nil when auditing is off.
	backend auditlib.Backend
	// sink is what requests' events go to: backend until Run ends.
	sink *sink
	// closers close the log file when Run ends.
	closers []io.Closer

	mu  sync.Mutex
	ran bool
}

// New loads o's policy and sets up its backends (log file and webhook; both when both
// are configured). Without a policy file, or without any backend, the Auditor audits
// nothing: its filters only give requests their Audit-ID. Events are sent to the
// backends once Run runs (blocking backends take them at once).
func New(ctx context.Context, o Options) (*Auditor, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	if o.PolicyFile == "" {
		if o.LogPath != "" || o.WebhookConfigFile != "" {
			logger.Info("No audit policy file (--audit-policy-file): auditing is off")
		}
		return &Auditor{}, nil
	}
	p, err := policy.LoadPolicyFromFile(o.PolicyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	a := &Auditor{}
	var backends []auditlib.Backend
	if o.LogPath != "" {
		w, closer, err := o.logWriter()
		if err != nil {
			return nil, fmt.Errorf("%w: log file %s: %w", ErrBackend, o.LogPath, err)
		}
		if closer != nil {
			a.closers = append(a.closers, closer)
		}
		backends = append(backends, o.LogBatch.wrap(pluginlog.NewBackend(w, o.LogFormat, auditv1.SchemeGroupVersion), false))
	}
	if o.WebhookConfigFile != "" {
		b, err := pluginwebhook.NewBackend(o.WebhookConfigFile, auditv1.SchemeGroupVersion,
			webhook.DefaultRetryBackoffWithInitialDelay(o.WebhookInitialBackoff), nil)
		if err != nil {
			a.close(logger)
			return nil, fmt.Errorf("%w: webhook configuration %s: %w", ErrBackend, o.WebhookConfigFile, err)
		}
		backends = append(backends, o.WebhookBatch.wrap(b, true))
	}
	if len(backends) == 0 {
		logger.Info("No audit backend (--audit-log-path, --audit-webhook-config-file): auditing is off", "policy", o.PolicyFile)
		return a, nil
	}
	a.evaluator = policy.NewPolicyRuleEvaluator(p)
	a.backend = auditlib.Union(backends...)
	a.sink = &sink{backend: a.backend, logger: logger}
	logger.V(2).Info("Auditing", "policy", o.PolicyFile, "rules", len(p.Rules), "backend", a.backend.String())
	return a, nil
}

// Run runs the backends until ctx is done, then stops them: events still buffered are
// sent (a webhook that keeps failing delays this by its retries), later events are
// dropped (and logged), and the log file is closed. It returns then, with nil; it
// returns at once an error if a backend cannot start, or ErrAlreadyRun. An Auditor
// that audits nothing just waits for ctx. Stop serving requests before ctx is done.
func (a *Auditor) Run(ctx context.Context) error {
	if a == nil || a.backend == nil {
		<-ctx.Done()
		return nil
	}
	a.mu.Lock()
	ran := a.ran
	a.ran = true
	a.mu.Unlock()
	if ran {
		return ErrAlreadyRun
	}
	logger := klog.FromContext(ctx)
	stop := make(chan struct{})
	if err := a.backend.Run(stop); err != nil {
		a.sink.stop()
		close(stop)
		a.backend.Shutdown()
		a.close(logger)
		return fmt.Errorf("%w: starting %s: %w", ErrBackend, a.backend, err)
	}
	<-ctx.Done()
	a.sink.stop()
	close(stop)
	a.backend.Shutdown()
	a.close(logger)
	logger.V(2).Info("Audit backends stopped", "backend", a.backend.String())
	return nil
}

// enabled reports whether requests are audited.
func (a *Auditor) enabled() bool { return a != nil && a.evaluator != nil && a.backend != nil }

func (a *Auditor) close(logger logr.Logger) {
	for _, c := range a.closers {
		if err := c.Close(); err != nil {
			logger.Error(err, "Closing the audit log")
		}
	}
}

// logWriter opens the log file as kube-apiserver does: created 0600 in a directory
// created 0700, rotated by lumberjack unless LogMaxSize is 0. The closer is nil for
// standard output.
func (o *Options) logWriter() (io.Writer, io.Closer, error) {
	if o.LogPath == "-" {
		return os.Stdout, nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(o.LogPath), 0o700); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(o.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, err
	}
	if o.LogMaxSize == 0 {
		return f, f, nil
	}
	if err := f.Close(); err != nil {
		return nil, nil, err
	}
	l := &lumberjack.Logger{
		Filename:   o.LogPath,
		MaxAge:     o.LogMaxAge,
		MaxBackups: o.LogMaxBackups,
		MaxSize:    o.LogMaxSize,
		Compress:   o.LogCompress,
	}
	return l, l, nil
}

// wrap gives delegate the mode of b: buffered in ModeBatch (calling delegate from
// goroutines of its own if async), failures ignored in ModeBlocking.
func (b BatchOptions) wrap(delegate auditlib.Backend, async bool) auditlib.Backend {
	switch b.Mode {
	case ModeBlockingStrict:
		return delegate
	case ModeBatch:
		return pluginbuffered.NewBackend(delegate, pluginbuffered.BatchConfig{
			BufferSize:     b.BufferSize,
			MaxBatchSize:   b.MaxBatchSize,
			MaxBatchWait:   b.MaxBatchWait,
			ThrottleEnable: b.ThrottleEnable,
			ThrottleQPS:    b.ThrottleQPS,
			ThrottleBurst:  b.ThrottleBurst,
			AsyncDelegate:  async,
		})
	}
	return ignoreErrors{delegate}
}

// ignoreErrors reports every event stored: its backend logs its own failures.
type ignoreErrors struct{ auditlib.Backend }

func (b ignoreErrors) ProcessEvents(events ...*auditinternal.Event) bool {
	b.Backend.ProcessEvents(events...)
	return true
}

func (b ignoreErrors) String() string { return b.Backend.String() }

// sink hands events to the backend until stop; later ones are dropped and logged,
// since a stopped backend can no longer take them.
type sink struct {
	backend auditlib.Backend
	logger  logr.Logger

	mu      sync.RWMutex
	stopped bool
}

func (s *sink) ProcessEvents(events ...*auditinternal.Event) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.stopped {
		for _, ev := range events {
			s.logger.Error(nil, "Audit event dropped: the auditor has stopped", "auditID", ev.AuditID, "stage", ev.Stage, "verb", ev.Verb, "uri", ev.RequestURI)
		}
		return true
	}
	return s.backend.ProcessEvents(events...)
}

// stop waits for the events being handed over, and drops later ones.
func (s *sink) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
}
