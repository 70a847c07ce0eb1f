package audit

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	pluginlog "k8s.io/apiserver/plugin/pkg/audit/log"
	pluginwebhook "k8s.io/apiserver/plugin/pkg/audit/webhook"
)

// ErrInvalidOptions is wrapped by every problem Validate reports.
var ErrInvalidOptions = errors.New("invalid audit options")

// The modes of a backend (--audit-log-mode, --audit-webhook-mode), as in
// kube-apiserver.
const (
	// ModeBatch buffers events and sends them in batches from a goroutine: requests
	// never wait for the backend, and events still buffered are sent when Run ends.
	ModeBatch = "batch"
	// ModeBlocking sends each event before the request goes on; a failure is logged.
	ModeBlocking = "blocking"
	// ModeBlockingStrict is ModeBlocking, but a request whose RequestReceived event
	// cannot be stored is refused (500).
	ModeBlockingStrict = "blocking-strict"
)

// The formats of the log backend (--audit-log-format).
const (
	// FormatJSON writes one audit.k8s.io/v1 Event as JSON per line.
	FormatJSON = pluginlog.FormatJson
	// FormatLegacy writes one line of text per event.
	FormatLegacy = pluginlog.FormatLegacy
)

var (
	allowedModes   = []string{ModeBatch, ModeBlocking, ModeBlockingStrict}
	allowedFormats = []string{FormatJSON, FormatLegacy}
)

// Options are kube-apiserver's audit flags, with their meaning and defaults
// (NewOptions). Auditing is on when PolicyFile is set and at least one backend (a
// log path, a webhook configuration) is.
type Options struct {
	// PolicyFile is the audit.k8s.io/v1 Policy (--audit-policy-file). Without one
	// nothing is audited, whatever the backends.
	PolicyFile string

	// LogPath is the file the log backend appends events to (--audit-log-path); "-"
	// is standard output, "" disables the backend.
	LogPath string
	// LogMaxAge is how many days rotated files are kept (--audit-log-maxage); 0 keeps
	// them whatever their age.
	LogMaxAge int
	// LogMaxBackups is how many rotated files are kept (--audit-log-maxbackup); 0
	// keeps them all.
	LogMaxBackups int
	// LogMaxSize is the size in megabytes at which the file is rotated
	// (--audit-log-maxsize); 0 never rotates it.
	LogMaxSize int
	// LogCompress gzips rotated files (--audit-log-compress).
	LogCompress bool
	// LogFormat is FormatJSON or FormatLegacy (--audit-log-format).
	LogFormat string
	// LogBatch is how events reach the log file (--audit-log-mode, --audit-log-batch-*).
	LogBatch BatchOptions

	// WebhookConfigFile is a kubeconfig naming the server events are POSTed to, as
	// audit.k8s.io/v1 EventLists (--audit-webhook-config-file); "" disables the
	// backend.
	WebhookConfigFile string
	// WebhookInitialBackoff is the wait before the first retry of a failed POST
	// (--audit-webhook-initial-backoff); later retries wait longer.
	WebhookInitialBackoff time.Duration
	// WebhookBatch is how events reach the webhook (--audit-webhook-mode,
	// --audit-webhook-batch-*).
	WebhookBatch BatchOptions
}

// BatchOptions are a backend's mode and, in ModeBatch, its batching.
type BatchOptions struct {
	// Mode is ModeBatch, ModeBlocking or ModeBlockingStrict.
	Mode string
	// BufferSize is how many events wait for the backend before new ones are
	// dropped (and logged).
	BufferSize int
	// MaxBatchSize is the most events sent at once.
	MaxBatchSize int
	// MaxBatchWait is the longest a batch smaller than MaxBatchSize waits.
	MaxBatchWait time.Duration
	// ThrottleEnable limits batches to ThrottleQPS a second, ThrottleBurst at once.
	ThrottleEnable bool
	ThrottleQPS    float32
	ThrottleBurst  int
}

// NewOptions returns kube-apiserver's defaults: no policy and no backend; a log
// file, once named, in JSON, rotated at 100 MB, keeping 100 files for 366 days,
// written as each event comes (blocking); a webhook, once configured, sent batches of
// up to 400 events at least every 30 seconds, at most 10 a second (burst 15).
func NewOptions() Options {
	return Options{
		LogMaxAge:     366,
		LogMaxBackups: 100,
		LogMaxSize:    100,
		LogFormat:     FormatJSON,
		LogBatch: BatchOptions{
			Mode:         ModeBlocking,
			BufferSize:   10000,
			MaxBatchSize: 1,
		},
		WebhookInitialBackoff: pluginwebhook.DefaultInitialBackoffDelay,
		WebhookBatch: BatchOptions{
			Mode:           ModeBatch,
			BufferSize:     10000,
			MaxBatchSize:   400,
			MaxBatchWait:   30 * time.Second,
			ThrottleEnable: true,
			ThrottleQPS:    10,
			ThrottleBurst:  15,
		},
	}
}

// AddFlags adds kube-apiserver's audit flags to fs, with o's values as defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.PolicyFile, "audit-policy-file", o.PolicyFile,
		"Path to the audit policy (audit.k8s.io/v1 Policy). Without it nothing is audited.")
	fs.StringVar(&o.LogPath, "audit-log-path", o.LogPath,
		"File the audit log backend appends events to; '-' is standard output. Empty disables the backend.")
	fs.IntVar(&o.LogMaxAge, "audit-log-maxage", o.LogMaxAge,
		"Days to keep rotated audit log files; 0 keeps them whatever their age.")
	fs.IntVar(&o.LogMaxBackups, "audit-log-maxbackup", o.LogMaxBackups,
		"Number of rotated audit log files to keep; 0 keeps them all.")
	fs.IntVar(&o.LogMaxSize, "audit-log-maxsize", o.LogMaxSize,
		"Size in megabytes at which the audit log file is rotated; 0 never rotates it.")
	fs.BoolVar(&o.LogCompress, "audit-log-compress", o.LogCompress,
		"Gzip rotated audit log files.")
	fs.StringVar(&o.LogFormat, "audit-log-format", o.LogFormat,
		"Format of the audit log: "+strings.Join(allowedFormats, ", ")+" (json: one Event object a line; legacy: one line of text).")
	o.LogBatch.addFlags(fs, pluginlog.PluginName)
	fs.StringVar(&o.WebhookConfigFile, "audit-webhook-config-file", o.WebhookConfigFile,
		"Kubeconfig file naming the server audit events are sent to. Empty disables the backend.")
	fs.DurationVar(&o.WebhookInitialBackoff, "audit-webhook-initial-backoff", o.WebhookInitialBackoff,
		"Wait before the first retry of a failed audit webhook request.")
	o.WebhookBatch.addFlags(fs, pluginwebhook.PluginName)
}

func (b *BatchOptions) addFlags(fs *pflag.FlagSet, backend string) {
	prefix := "audit-" + backend + "-"
	fs.StringVar(&b.Mode, prefix+"mode", b.Mode,
		"How events reach the "+backend+" backend: "+strings.Join(allowedModes, ", ")+
			" (batch: buffered and sent from the background; blocking: before the request goes on;"+
			" blocking-strict: blocking, and a request whose first event cannot be stored is refused).")
	fs.IntVar(&b.BufferSize, prefix+"batch-buffer-size", b.BufferSize,
		"Events buffered before new ones are dropped. Batch mode only.")
	fs.IntVar(&b.MaxBatchSize, prefix+"batch-max-size", b.MaxBatchSize,
		"Most events in a batch. Batch mode only.")
	fs.DurationVar(&b.MaxBatchWait, prefix+"batch-max-wait", b.MaxBatchWait,
		"Longest wait before a batch smaller than the maximum is sent. Batch mode only.")
	fs.BoolVar(&b.ThrottleEnable, prefix+"batch-throttle-enable", b.ThrottleEnable,
		"Limit the rate of batches. Batch mode only.")
	fs.Float32Var(&b.ThrottleQPS, prefix+"batch-throttle-qps", b.ThrottleQPS,
		"Most batches a second, when throttled. Batch mode only.")
	fs.IntVar(&b.ThrottleBurst, prefix+"batch-throttle-burst", b.ThrottleBurst,
		"Most batches sent at once when the rate allowed was not used up. Batch mode only.")
}

// Validate reports every problem of o, one line each, all wrapping
// ErrInvalidOptions. Backends are checked only when enabled. As in kube-apiserver, a
// backend without a policy file, or a policy file without a backend, is allowed
// (nothing is audited then).
func (o *Options) Validate() error {
	var errs []error
	problem := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...))
	}
	if o.LogPath != "" {
		if !slices.Contains(allowedFormats, o.LogFormat) {
			problem("--audit-log-format %q: allowed formats are %s", o.LogFormat, strings.Join(allowedFormats, ", "))
		}
		for _, f := range []struct {
			flag  string
			value int
		}{{"maxage", o.LogMaxAge}, {"maxbackup", o.LogMaxBackups}, {"maxsize", o.LogMaxSize}} {
			if f.value < 0 {
				problem("--audit-log-%s %d: must be 0 or more", f.flag, f.value)
			}
		}
		o.LogBatch.validate(pluginlog.PluginName, problem)
	}
	if o.WebhookConfigFile != "" {
		if o.WebhookInitialBackoff < 0 {
			problem("--audit-webhook-initial-backoff %s: must be 0 or more", o.WebhookInitialBackoff)
		}
		o.WebhookBatch.validate(pluginwebhook.PluginName, problem)
	}
	return errors.Join(errs...)
}

func (b *BatchOptions) validate(backend string, problem func(string, ...any)) {
	prefix := "--audit-" + backend + "-"
	if !slices.Contains(allowedModes, b.Mode) {
		problem("%smode %q: allowed modes are %s", prefix, b.Mode, strings.Join(allowedModes, ", "))
		return
	}
	if b.Mode != ModeBatch {
		return
	}
	if b.BufferSize <= 0 {
		problem("%sbatch-buffer-size %d: must be positive in batch mode", prefix, b.BufferSize)
	}
	if b.MaxBatchSize <= 0 {
		problem("%sbatch-max-size %d: must be positive in batch mode", prefix, b.MaxBatchSize)
	}
	if b.MaxBatchWait < 0 {
		problem("%sbatch-max-wait %s: must be 0 or more", prefix, b.MaxBatchWait)
	}
	if b.ThrottleEnable && b.ThrottleQPS <= 0 {
		problem("%sbatch-throttle-qps %v: must be positive when throttling", prefix, b.ThrottleQPS)
	}
	if b.ThrottleEnable && b.ThrottleBurst <= 0 {
		problem("%sbatch-throttle-burst %d: must be positive when throttling", prefix, b.ThrottleBurst)
	}
}
