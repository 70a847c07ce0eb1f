package bench

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// The helpers are tested here because the figures depend on them; these tests run
// in a plain `go test` and take milliseconds.

func TestParseStatCPU(t *testing.T) {
	cases := []struct {
		name, stat string
		ticks      int64
		want       time.Duration
		wantErr    bool
	}{
		{
			name:  "plain",
			stat:  "4242 (concord) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 0",
			ticks: 100, want: 3 * time.Second,
		},
		{
			name:  "command with spaces and parentheses",
			stat:  "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 1 0",
			ticks: 100, want: 100 * time.Millisecond,
		},
		{name: "other tick rate", stat: "1 (x) S 0 1 1 0 -1 0 0 0 0 0 1000 0 0", ticks: 1000, want: time.Second},
		{name: "truncated", stat: "1 (x) S 0 1 1", ticks: 100, wantErr: true},
		{name: "no command", stat: "1 x S", ticks: 100, wantErr: true},
		{name: "not a number", stat: "1 (x) S 0 1 1 0 -1 0 0 0 0 0 u 0 0", ticks: 100, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tc.stat), tc.ticks)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("parseStatCPU = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseMachineBusy(t *testing.T) {
	cases := []struct {
		name, stat string
		want       time.Duration
		wantErr    bool
	}{
		{"busy fields only", "cpu  100 20 30 5000 70 1 2 3 0 0\ncpu0 50 10 15 2500 35 0 1 1 0 0\n", 1560 * time.Millisecond, false},
		{"per-cpu line first", "cpu0 1 2 3 4 5 6 7 8\n", 0, true},
		{"short", "cpu 1 2 3\n", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMachineBusy([]byte(tc.stat), 100)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("parseMachineBusy = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// The process's CPU time grows as it works: spinning until it has grown by 50ms
// ends (on a loaded machine the spin takes longer in wall time, never forever).
func TestCPUTimeGrowsWithWork(t *testing.T) {
	before, err := cpuTime(os.Getpid())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	x := 0
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		for range 1_000_000 {
			x++
		}
		after, err := cpuTime(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if after-before >= 50*time.Millisecond {
			return
		}
	}
	t.Fatalf("a minute of busy loop (%d turns) did not add 50ms of CPU time", x)
}

func TestQuantiles(t *testing.T) {
	ms := func(ns ...int) latencies {
		l := make(latencies, len(ns))
		for i, n := range ns {
			l[i] = time.Duration(n) * time.Millisecond
		}
		return l
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // 100..1, unsorted
	}
	cases := []struct {
		name          string
		l             latencies
		p50, p99, max time.Duration
	}{
		{"empty", nil, 0, 0, 0},
		{"one", ms(7), 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond},
		{"hundred", ms(hundred...), 50 * time.Millisecond, 99 * time.Millisecond, 100 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p50, p99 := tc.l.quantiles()
			if p50 != tc.p50 || p99 != tc.p99 || tc.l.max() != tc.max {
				t.Fatalf("p50, p99, max = %v, %v, %v; want %v, %v, %v", p50, p99, tc.l.max(), tc.p50, tc.p99, tc.max)
			}
		})
	}
}

func TestValueTemplate(t *testing.T) {
	stored := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"r-00000000","namespace":"bench-read","uid":"u"},"data":{"payload":"xxxx"}}`)
	cl := &cluster{stored: stored}
	tmpl, err := cl.template("other")
	if err != nil {
		t.Fatal(err)
	}
	a, b := tmpl.value("p-00000001"), tmpl.value("p-00000002")
	var obj struct {
		Metadata struct{ Name, Namespace, UID string }
		Data     map[string]string
	}
	if err := json.Unmarshal([]byte(a), &obj); err != nil {
		t.Fatal(err)
	}
	if obj.Metadata.Name != "p-00000001" || obj.Metadata.Namespace != "other" || obj.Metadata.UID != "u" || obj.Data["payload"] != "xxxx" {
		t.Fatalf("value = %s", a)
	}
	if len(a) != len(b) || !strings.Contains(b, `"name":"p-00000002"`) {
		t.Fatalf("values of two names differ in more than the name: %s / %s", a, b)
	}
}

func TestWriteTable(t *testing.T) {
	var r results
	r.put("create", 1, result{opsPerSec: 500, serverCPUOp: 300 * time.Microsecond, othersCPU: 0.12})
	r.put("etcd-txn", 1, result{opsPerSec: 1000})
	r.put("get", 8, result{opsPerSec: 900})
	r.putStartup("embedded-etcd", 420*time.Millisecond)
	var out strings.Builder
	r.writeTable(&out, []int{1, 8})
	for _, want := range []string{"create/etcd-txn", "0.50 [0.35]", "- [0.22]", "300µs", "get/etcd-txn", "watch/etcd-watch", "embedded-etcd: p50 420ms", "at most 12% of the machine"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// Values of a template differ in name and uid, and keep the template's length.
func TestTemplateValuesAreDistinctObjects(t *testing.T) {
	stored := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"#-########","uid":"0b2f3c4d-1111-2222-3333-444455556666"},"data":{"a":"b"}}`)
	tmpl, err := templateOf(stored, "#-########")
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]bool{}
	for i := range 3 {
		v := tmpl.value(objectName('m', int64(i)))
		var obj struct {
			Metadata struct{ Name, UID string } `json:"metadata"`
		}
		if err := json.Unmarshal([]byte(v), &obj); err != nil || len(v) != len(stored) {
			t.Fatalf("value %d: %v, %d bytes of %d", i, err, len(v), len(stored))
		}
		if obj.Metadata.Name != objectName('m', int64(i)) || len(obj.Metadata.UID) != 36 || uids[obj.Metadata.UID] {
			t.Fatalf("value %d: name %q, uid %q (seen: %v)", i, obj.Metadata.Name, obj.Metadata.UID, uids)
		}
		uids[obj.Metadata.UID] = true
	}
}
