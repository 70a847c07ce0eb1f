package differential

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	rewrite           = flag.Bool("rewrite", false, "run the cases against kube-apiserver peers and rewrite testdata/kube-*.json")
	rewriteDifference = flag.Bool("differences", false, "rewrite testdata/differences.json from Concord's answers of this run")
	dump              = flag.String("dump", "", "write Concord's answers, as the recordings are written, into this directory")
)

func flagsParse() { flag.Parse() }

// peerRelease is the kube-apiserver release the recordings come from; Concord's
// binary is built against the same release.
const peerRelease = "1.37.2"

// config is one configuration of both servers the corpus runs against.
type config struct {
	name      string // of the recording: testdata/<name>.json
	emulation string
	peerArgs  []string
	// concordArgs are the flags of concord server.
	concordArgs []string
}

var configs = []config{
	{name: "kube-" + peerRelease, emulation: "1.37"},
	{name: "kube-" + peerRelease + "-emulating-1.36", emulation: "1.36",
		peerArgs: []string{"--emulated-version=1.36"}, concordArgs: []string{"--emulation-version", "1.36"}},
}

// recording is what kube-apiserver answered to every case in one configuration.
type recording struct {
	Server    string              `json:"server"`
	Emulation string              `json:"emulation"`
	Cases     map[string][]answer `json:"cases"`
}

func (c config) path() string { return filepath.Join("testdata", c.name+".json") }

// TestDifferential sends every case to the concord binary, once per configuration,
// and compares each answer with kube-apiserver's recorded one; the cases that
// differ must be those testdata/differences.json lists. With -rewrite it sends them
// to kube-apiserver peers instead and records their answers.
func TestDifferential(t *testing.T) {
	seeds, err := loadSeeds()
	if err != nil {
		t.Fatal(err)
	}
	cases := allCases(seeds)
	checkCorpus(t, cases)
	listed := map[string]map[string]string{}
	if !*rewrite {
		listed = readDifferences(t)
	}
	var mu sync.Mutex
	got := map[string]map[string][]answer{}
	t.Run("configs", func(t *testing.T) {
		for _, c := range configs {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				var tg *target
				start := time.Now()
				if *rewrite {
					tg = startPeer(t, c.peerArgs...)
				} else {
					tg = startConcord(t, c.concordArgs...)
				}
				started := time.Now()
				setupNamespaces(t, tg)
				answers := runAll(t, tg, sendable(cases, listed[c.name]))
				t.Logf("%s: started in %v, ran the cases in %v", tg.name, started.Sub(start).Round(time.Millisecond),
					time.Since(started).Round(time.Millisecond))
				checkAnswered(t, answers)
				mu.Lock()
				got[c.name] = answers
				mu.Unlock()
			})
		}
	})
	if t.Failed() || t.Skipped() || len(got) != len(configs) {
		return
	}
	if *rewrite {
		for _, c := range configs {
			writeRecording(t, c, got[c.name])
		}
		logCorpus(t, cases, got[configs[0].name])
		return
	}
	if *dump != "" {
		for _, c := range configs {
			path := filepath.Join(*dump, "concord-"+c.name+".json")
			if err := os.WriteFile(path, marshalByLine("concord", c.emulation, got[c.name]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	check(t, cases, got, listed)
}

// sendable are the cases but those listed as crashing Concord.
func sendable(cases []tcase, listed map[string]string) []tcase {
	var out []tcase
	for _, c := range cases {
		if !strings.HasPrefix(listed[c.id], crashes) {
			out = append(out, c)
		}
	}
	return out
}

// checkCorpus holds the corpus to its promises: unique ids, at least 1,000 cases,
// every resource covered.
func checkCorpus(t *testing.T, cases []tcase) {
	t.Helper()
	ids := map[string]bool{}
	perResource := map[string]int{}
	for _, c := range cases {
		if ids[c.id] {
			t.Fatalf("two cases have the id %q", c.id)
		}
		ids[c.id] = true
		perResource[c.res.id()]++
	}
	if len(cases) < 1000 {
		t.Errorf("%d cases, want at least 1000", len(cases))
	}
	for _, r := range resources {
		if perResource[r.id()] < 3 {
			t.Errorf("%s has %d cases, want at least 3", r.id(), perResource[r.id()])
		}
	}
}

func readRecording(c config) (recording, error) {
	var rec recording
	data, err := os.ReadFile(c.path())
	if err != nil {
		return rec, fmt.Errorf("%w (record it: go test ./test/differential -run TestDifferential -args -rewrite)", err)
	}
	return rec, json.Unmarshal(data, &rec)
}

// writeRecording writes a recording with one case a line, in id order.
func writeRecording(t *testing.T, c config, answers map[string][]answer) {
	t.Helper()
	rec := recording{Server: "kube-apiserver v" + peerRelease, Emulation: c.emulation, Cases: answers}
	if err := os.WriteFile(c.path(), marshalByLine(rec.Server, rec.Emulation, answers), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d cases from kube-apiserver %s emulating %s in %s", len(answers), peerRelease, c.emulation, c.path())
}

func marshalByLine[V any](server, emulation string, m map[string]V) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n\"server\": %q,\n\"emulation\": %q,\n\"cases\": {\n", server, emulation)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		val := marshal(m[k])
		b.Write(marshal(k))
		b.WriteString(": ")
		b.Write(val)
		if i < len(keys)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("}\n}\n")
	return b.Bytes()
}

// marshal is JSON without HTML escapes (the placeholders' angle brackets stay).
func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// checkAnswered fails a run in which the server left a request unanswered (it
// exited, or reset the connection): the server's log then follows.
func checkAnswered(t *testing.T, answers map[string][]answer) {
	t.Helper()
	n, first := 0, ""
	for id, steps := range answers {
		for _, a := range steps {
			if strings.HasPrefix(a.Message, "no answer") {
				n++
				if first == "" || id < first {
					first = id
				}
			}
		}
	}
	if n > 0 {
		t.Errorf("%d requests got no answer, the first of case %s", n, first)
	}
}
