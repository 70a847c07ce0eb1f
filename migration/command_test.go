package migration

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	migrationapi "github.com/concordproject/concord/migration/api"
	"github.com/concordproject/concord/migration/migrator"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

func TestPrintMigrations(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) metav1.Time { return metav1.NewTime(now.Add(-ago)) }
	total := func(n int64) *int64 { return &n }
	cond := func(typ, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason}
	}
	migs := []*migrationapi.StorageVersionMigration{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com-2", CreationTimestamp: at(9 * time.Second)},
			Status: migrationapi.MigrationStatus{Conditions: []metav1.Condition{cond(migrationapi.ConditionRunning, migrationapi.ReasonMigrationRunning)},
				Progress: &migrationapi.Progress{Total: total(200), Migrated: 80, Skipped: 10}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "configmaps-1", CreationTimestamp: at(3 * time.Hour)},
			Status: migrationapi.MigrationStatus{Conditions: []metav1.Condition{cond(migrationapi.ConditionSucceeded, migrationapi.ReasonMigrationCompleted)},
				Progress: &migrationapi.Progress{Total: total(3), Migrated: 3}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com-1", CreationTimestamp: at(5 * time.Minute)},
			Status: migrationapi.MigrationStatus{Conditions: []metav1.Condition{cond(migrationapi.ConditionFailed, migrationapi.ReasonObjectsFailed)},
				Progress: &migrationapi.Progress{Total: total(200), Migrated: 199, Failed: 1,
					Failures: []migrationapi.ObjectFailure{{Namespace: "default", Name: "bad", Reason: "422 Invalid: spec.size"}}}},
		},
		{ObjectMeta: metav1.ObjectMeta{Name: "leases.coordination.k8s.io-1", CreationTimestamp: at(time.Second)}},
	}
	migs[0].Spec.Resource = metav1.GroupResource{Group: "example.com", Resource: "widgets"}
	migs[1].Spec.Resource = metav1.GroupResource{Resource: "configmaps"}
	migs[2].Spec.Resource = metav1.GroupResource{Group: "example.com", Resource: "widgets"}
	migs[3].Spec.Resource = metav1.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

	var out bytes.Buffer
	if err := PrintMigrations(&out, migs, "", now); err != nil {
		t.Fatal(err)
	}
	want := `RESOURCE                    PHASE                   PROGRESS                     MIGRATED  SKIPPED  FAILED  TOTAL  AGE  NAME
configmaps                  Succeeded               -                            3         0        0       3      3h   configmaps-1
leases.coordination.k8s.io  Pending                 -                            0         0        0       ?      1s   leases.coordination.k8s.io-1
widgets.example.com         Failed (ObjectsFailed)  -                            199       0        1       200    5m   widgets.example.com-1
widgets.example.com         Running                 [#########...........]  45%  80        10       0       200    9s   widgets.example.com-2

Objects not migrated:
  widgets.example.com-1: default/bad: 422 Invalid: spec.size
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}

	out.Reset()
	if err := PrintMigrations(&out, migs, "configmaps", now); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "widgets") || !strings.Contains(out.String(), "configmaps-1") {
		t.Errorf("filtered on configmaps:\n%s", out.String())
	}
	out.Reset()
	if err := PrintMigrations(&out, nil, "", now); err != nil || !strings.Contains(out.String(), "No storage version migrations.") {
		t.Errorf("no migrations: %q, %v", out.String(), err)
	}
}

func TestCommandFlags(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--concurrency=16", "--qps=200", "--rewrite=client", "--poll-interval=30s",
		"--leader-elect=false", "--migrations=3"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.Complete(&rest.Config{Host: "https://example.invalid"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Migrator.Concurrency != 16 || cfg.Migrator.QPS != 200 || cfg.Migrator.Mode != migrator.ModeClient ||
		cfg.PollInterval != 30*time.Second || !cfg.LeaderElection.Disabled || cfg.Migrations != 3 {
		t.Errorf("config %+v", cfg)
	}

	o = NewOptions()
	fs = pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse([]string{"--poll-interval=10m", "--staleness-window=5m", "--rewrite=fast"}); err != nil {
		t.Fatal(err)
	}
	_, err = o.Complete(&rest.Config{}, nil)
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "staleness") || !strings.Contains(err.Error(), "fast") {
		t.Errorf("invalid flags: %v", err)
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{PollInterval: 10 * time.Minute}.withDefaults()
	if c.StalenessWindow != 20*time.Minute || c.Migrations != 2 || c.HistoryLimit != 3 || c.LeaderElection.Namespace != "kube-system" {
		t.Errorf("defaults %+v", c)
	}
	if err := (Config{}).Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a config without a REST config: %v", err)
	}
}
