package audit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/concordproject/concord/audit"
	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name      string
		configure func(*audit.Options)
		want      []string // the problems, one a line; none: valid
	}{
		{name: "defaults", configure: func(*audit.Options) {}},
		{name: "a log without a policy", configure: func(o *audit.Options) { o.LogPath = "-" }},
		{name: "a policy without a backend", configure: func(o *audit.Options) { o.PolicyFile = "policy.yaml" }},
		{name: "log settings unchecked without a log path", configure: func(o *audit.Options) {
			o.LogFormat, o.LogMaxSize, o.LogBatch.Mode = "xml", -1, "fast"
		}},
		{name: "an unknown format", configure: func(o *audit.Options) { o.LogPath, o.LogFormat = "-", "xml" },
			want: []string{`invalid audit options: --audit-log-format "xml": allowed formats are json, legacy`}},
		{name: "negative sizes", configure: func(o *audit.Options) {
			o.LogPath, o.LogMaxAge, o.LogMaxBackups, o.LogMaxSize = "/var/log/audit.log", -1, -2, -3
		}, want: []string{
			"invalid audit options: --audit-log-maxage -1: must be 0 or more",
			"invalid audit options: --audit-log-maxbackup -2: must be 0 or more",
			"invalid audit options: --audit-log-maxsize -3: must be 0 or more",
		}},
		{name: "an unknown mode", configure: func(o *audit.Options) { o.LogPath, o.LogBatch.Mode = "-", "fast" },
			want: []string{`invalid audit options: --audit-log-mode "fast": allowed modes are batch, blocking, blocking-strict`}},
		{name: "batch settings unchecked when blocking", configure: func(o *audit.Options) {
			o.WebhookConfigFile, o.WebhookBatch.Mode, o.WebhookBatch.BufferSize = "wh.kubeconfig", audit.ModeBlocking, 0
		}},
		{name: "batch settings", configure: func(o *audit.Options) {
			o.WebhookConfigFile = "wh.kubeconfig"
			o.WebhookInitialBackoff = -time.Second
			b := &o.WebhookBatch
			b.BufferSize, b.MaxBatchSize, b.MaxBatchWait, b.ThrottleQPS, b.ThrottleBurst = 0, -1, -time.Second, 0, 0
		}, want: []string{
			"invalid audit options: --audit-webhook-initial-backoff -1s: must be 0 or more",
			"invalid audit options: --audit-webhook-batch-buffer-size 0: must be positive in batch mode",
			"invalid audit options: --audit-webhook-batch-max-size -1: must be positive in batch mode",
			"invalid audit options: --audit-webhook-batch-max-wait -1s: must be 0 or more",
			"invalid audit options: --audit-webhook-batch-throttle-qps 0: must be positive when throttling",
			"invalid audit options: --audit-webhook-batch-throttle-burst 0: must be positive when throttling",
		}},
		{name: "no throttle, no throttle settings", configure: func(o *audit.Options) {
			o.WebhookConfigFile, o.WebhookBatch.ThrottleEnable, o.WebhookBatch.ThrottleQPS = "wh.kubeconfig", false, 0
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := audit.NewOptions()
			tc.configure(&o)
			err := o.Validate()
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
				if !errors.Is(err, audit.ErrInvalidOptions) {
					t.Errorf("%v is no ErrInvalidOptions", err)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAddFlags(t *testing.T) {
	o := audit.NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	err := fs.Parse([]string{
		"--audit-policy-file=/etc/policy.yaml",
		"--audit-log-path=-",
		"--audit-log-maxage=7", "--audit-log-maxbackup=3", "--audit-log-maxsize=50",
		"--audit-log-format=legacy", "--audit-log-compress",
		"--audit-log-mode=batch", "--audit-log-batch-buffer-size=5",
		"--audit-webhook-config-file=/etc/wh.kubeconfig",
		"--audit-webhook-initial-backoff=2s",
		"--audit-webhook-mode=blocking-strict",
		"--audit-webhook-batch-max-size=10", "--audit-webhook-batch-max-wait=5s",
		"--audit-webhook-batch-throttle-enable=false", "--audit-webhook-batch-throttle-qps=1.5",
		"--audit-webhook-batch-throttle-burst=2",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := audit.NewOptions()
	want.PolicyFile = "/etc/policy.yaml"
	want.LogPath, want.LogMaxAge, want.LogMaxBackups, want.LogMaxSize = "-", 7, 3, 50
	want.LogFormat, want.LogCompress = audit.FormatLegacy, true
	want.LogBatch.Mode, want.LogBatch.BufferSize = audit.ModeBatch, 5
	want.WebhookConfigFile, want.WebhookInitialBackoff = "/etc/wh.kubeconfig", 2*time.Second
	want.WebhookBatch = audit.BatchOptions{Mode: audit.ModeBlockingStrict, BufferSize: 10000, MaxBatchSize: 10,
		MaxBatchWait: 5 * time.Second, ThrottleQPS: 1.5, ThrottleBurst: 2}
	if diff := cmp.Diff(want, o); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
