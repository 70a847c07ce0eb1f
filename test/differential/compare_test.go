package differential

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

var differencesPath = filepath.Join("testdata", "differences.json")

// Categories of differences (the stored-object one names the first differing path).
const (
	notServed    = "not served by Concord"
	acceptedByUs = "accepted by Concord, refused by kube"
	refusedByUs  = "refused by Concord, accepted by kube"
	otherCode    = "different error code"
	otherReason  = "different reason"
	otherCauses  = "different causes"
	otherMessage = "different message"
	otherObject  = "different stored object at "
	notRecorded  = "no recorded answer (re-record)"
	// crashes starts the category of a case that makes Concord exit: such a case is
	// listed by hand and not sent while it is listed.
	crashes        = "crashes Concord"
	otherStepCount = "different number of steps (re-record)"
)

// tally counts agreement over steps.
type tally struct {
	steps, decided             int // steps, steps both accepted or both refused alike
	bothAccepted, sameObject   int
	bothRefused, sameRefusal   int
	sameMessage                int // of sameRefusal
	cases, agreeing, refusedBy int // refusedBy: cases kube refused a step of
}

func pct(n, d int) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(d))
}

// classify compares a case's answers; "" when they agree, else the category of the
// first step that differs.
func classify(kube, concord []answer, t *tally) string {
	if kube == nil {
		return notRecorded
	}
	if len(kube) != len(concord) {
		return otherStepCount
	}
	category := ""
	for i := range kube {
		k, c := kube[i], concord[i]
		d := classifyStep(k, c, resolve(kube, i), resolve(concord, i), t)
		if category == "" && d != "" {
			category = d
		}
	}
	return category
}

// resolve is the object step i answered, following Same.
func resolve(answers []answer, i int) map[string]any {
	if answers[i].Same > 0 {
		return answers[answers[i].Same-1].Object
	}
	return answers[i].Object
}

func classifyStep(k, c answer, kobj, cobj map[string]any, t *tally) string {
	t.steps++
	kOK, cOK := k.Code >= 200 && k.Code < 300, c.Code >= 200 && c.Code < 300
	switch {
	case kOK && cOK:
		t.decided++
		t.bothAccepted++
		if p := firstDifference(kobj, cobj, ""); p != "" {
			return otherObject + p
		}
		t.sameObject++
	case !kOK && !cOK:
		t.decided++
		t.bothRefused++
		switch {
		case k.Code != c.Code:
			if c.Code == 404 && c.Reason == "NotFound" && strings.Contains(c.Message, "could not find the requested resource") {
				return notServed
			}
			return otherCode
		case k.Reason != c.Reason:
			return otherReason
		case !slices.Equal(k.Causes, c.Causes):
			return otherCauses
		}
		t.sameRefusal++
		if !sameMessage(k.Message, c.Message) {
			return otherMessage
		}
		t.sameMessage++
	case kOK:
		if c.Code == 404 && strings.Contains(c.Message, "could not find the requested resource") {
			return notServed
		}
		return refusedByUs
	default:
		return acceptedByUs
	}
	return ""
}

// digits are what two messages of the same refusal may differ in: resourceVersions,
// allocated ports, generated names.
var digits = regexp.MustCompile(`[0-9]+`)

// sameMessage reports whether two refusals' messages say the same, digits aside.
func sameMessage(a, b string) bool {
	return digits.ReplaceAllString(a, "N") == digits.ReplaceAllString(b, "N")
}

// firstDifference is the first path (in key order) where two decoded JSON values
// differ; "" when they are equal.
func firstDifference(a, b any, path string) string {
	if reflect.DeepEqual(a, b) {
		return ""
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			if p := firstDifference(am[k], bm[k], join(path, k)); p != "" {
				return p
			}
		}
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			if p := firstDifference(al[i], bl[i], fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	}
	if path == "" {
		return "(root)"
	}
	return path
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// readDifferences reads testdata/differences.json: per configuration, case id to
// category. It may be missing when -differences is to write it.
func readDifferences(t *testing.T) map[string]map[string]string {
	t.Helper()
	listed := map[string]map[string]string{}
	if data, err := os.ReadFile(differencesPath); err == nil {
		if err := json.Unmarshal(data, &listed); err != nil {
			t.Fatalf("%s: %v", differencesPath, err)
		}
	} else if !*rewriteDifference {
		t.Fatalf("%v (write it: go test ./test/differential -args -differences)", err)
	}
	return listed
}

// check compares Concord's answers with the recordings, holds the differences to
// the listed ones (or rewrites testdata/differences.json, with -differences) and
// logs a summary.
func check(t *testing.T, cases []tcase, got map[string]map[string][]answer, listed map[string]map[string]string) {
	t.Helper()
	now := map[string]map[string]string{}
	for _, c := range configs {
		rec, err := readRecording(c)
		if err != nil {
			t.Fatal(err)
		}
		now[c.name] = compareConfig(t, c, cases, rec, got[c.name], listed[c.name])
	}
	if *rewriteDifference {
		writeDifferences(t, now)
	}
}

// compareConfig classifies every case of one configuration, fails t for each
// difference the list does not name and each listed case that now agrees, and logs
// the summary. It returns the differences.
func compareConfig(t *testing.T, c config, cases []tcase, rec recording, got map[string][]answer, listed map[string]string) map[string]string {
	t.Helper()
	diffs := map[string]string{}
	all := &tally{}
	perResource := map[string]*tally{}
	var unlisted, fixed, moved []string
	for _, tc := range cases {
		rt := perResource[tc.res.id()]
		if rt == nil {
			rt = &tally{}
			perResource[tc.res.id()] = rt
		}
		before := *rt
		var cat string
		if was := listed[tc.id]; strings.HasPrefix(was, crashes) {
			cat = was
		} else {
			cat = classify(rec.Cases[tc.id], got[tc.id], rt)
		}
		addTally(all, rt, before)
		rt.cases++
		if refusedAny(rec.Cases[tc.id]) {
			rt.refusedBy++
		}
		if cat == "" {
			rt.agreeing++
		} else {
			diffs[tc.id] = cat
		}
		switch was := listed[tc.id]; {
		case cat != "" && was == "":
			unlisted = append(unlisted, fmt.Sprintf("%s: %s%s", tc.id, cat, firstAnswers(rec.Cases[tc.id], got[tc.id])))
		case cat == "" && was != "":
			fixed = append(fixed, tc.id)
		case cat != was:
			moved = append(moved, fmt.Sprintf("%s: %s (listed: %s)", tc.id, cat, was))
		}
	}
	for _, rt := range perResource {
		all.cases += rt.cases
		all.agreeing += rt.agreeing
		all.refusedBy += rt.refusedBy
	}
	logSummary(t, c, all, perResource, diffs)
	if !*rewriteDifference {
		report(t, c, "differ and are not listed in "+differencesPath, unlisted)
		report(t, c, "are listed in "+differencesPath+" but now agree: remove them (-differences)", fixed)
		if len(moved) > 0 {
			t.Logf("%s: %d listed cases differ otherwise than listed, e.g. %s", c.name, len(moved), moved[0])
		}
	}
	return diffs
}

// firstAnswers names the first step whose codes differ, with both answers' messages,
// for the reader of a new difference.
func firstAnswers(kube, concord []answer) string {
	for i := range min(len(kube), len(concord)) {
		if k, c := kube[i], concord[i]; k.Code != c.Code {
			return fmt.Sprintf(" (step %d: kube %d %q, Concord %d %q)", i+1, k.Code, k.Message, c.Code, c.Message)
		}
	}
	return ""
}

func refusedAny(answers []answer) bool {
	for _, a := range answers {
		if a.Code >= 300 || a.Code == 0 {
			return true
		}
	}
	return false
}

// addTally adds to all what classify added to rt since before.
func addTally(all, rt *tally, before tally) {
	all.steps += rt.steps - before.steps
	all.decided += rt.decided - before.decided
	all.bothAccepted += rt.bothAccepted - before.bothAccepted
	all.sameObject += rt.sameObject - before.sameObject
	all.bothRefused += rt.bothRefused - before.bothRefused
	all.sameRefusal += rt.sameRefusal - before.sameRefusal
	all.sameMessage += rt.sameMessage - before.sameMessage
}

func report(t *testing.T, c config, what string, ids []string) {
	t.Helper()
	if len(ids) == 0 {
		return
	}
	shown := ids
	if len(shown) > 20 {
		shown = shown[:20]
	}
	t.Errorf("%s: %d cases %s:\n  %s", c.name, len(ids), what, strings.Join(shown, "\n  "))
}

// logSummary logs the cases per resource and the agreement figures.
func logSummary(t *testing.T, c config, all *tally, perResource map[string]*tally, diffs map[string]string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s (emulating %s): %d cases (kube refused a step of %s), %d steps\n", c.name, c.emulation,
		all.cases, pct(all.refusedBy, all.cases), all.steps)
	fmt.Fprintf(&b, "  accept/reject agreement: %s of steps\n", pct(all.decided, all.steps))
	fmt.Fprintf(&b, "  same object where both accepted: %s (%d steps); same code, reason and causes where both refused: %s (%d steps), and the same message: %s\n",
		pct(all.sameObject, all.bothAccepted), all.bothAccepted, pct(all.sameRefusal, all.bothRefused), all.bothRefused,
		pct(all.sameMessage, all.bothRefused))
	fmt.Fprintf(&b, "  cases that agree in full: %s\n", pct(all.agreeing, all.cases))
	ids := make([]string, 0, len(perResource))
	for id := range perResource {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	b.WriteString("  per resource (cases, agreeing):")
	for i, id := range ids {
		if i%4 == 0 {
			b.WriteString("\n   ")
		}
		fmt.Fprintf(&b, " %s %d/%d;", id, perResource[id].agreeing, perResource[id].cases)
	}
	byCategory := map[string]int{}
	for _, cat := range diffs {
		if strings.HasPrefix(cat, otherObject) {
			cat = otherObject + "..."
		}
		byCategory[cat]++
	}
	b.WriteString("\n  differences by category:")
	for _, cat := range sortedByCount(byCategory) {
		fmt.Fprintf(&b, "\n    %5d %s", byCategory[cat], cat)
	}
	t.Log(b.String())
}

func sortedByCount(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

// writeDifferences writes testdata/differences.json: per configuration, case id to
// category, one case a line.
func writeDifferences(t *testing.T, diffs map[string]map[string]string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("{\n")
	for i, c := range configs {
		fmt.Fprintf(&b, "%s: {\n", quote(c.name))
		ids := make([]string, 0, len(diffs[c.name]))
		for id := range diffs[c.name] {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for j, id := range ids {
			fmt.Fprintf(&b, "  %s: %s", quote(id), quote(diffs[c.name][id]))
			if j < len(ids)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString("}")
		if i < len(configs)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	if err := os.WriteFile(differencesPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", differencesPath)
}

func quote(s string) string { return string(marshal(s)) }

// logCorpus logs the corpus after a recording: cases per resource, and how many of
// them kube-apiserver refused.
func logCorpus(t *testing.T, cases []tcase, kube map[string][]answer) {
	t.Helper()
	perResource := map[string][2]int{}
	invalid, refused := 0, 0
	for _, c := range cases {
		n := perResource[c.res.id()]
		n[0]++
		if refusedAny(kube[c.id]) {
			n[1]++
			refused++
		}
		if c.invalid {
			invalid++
		}
		perResource[c.res.id()] = n
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d cases: %d generated invalid (%s), %d with a step kube refused (%s); per resource (cases, refused):",
		len(cases), invalid, pct(invalid, len(cases)), refused, pct(refused, len(cases)))
	ids := make([]string, 0, len(perResource))
	for id := range perResource {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for i, id := range ids {
		if i%4 == 0 {
			b.WriteString("\n ")
		}
		fmt.Fprintf(&b, " %s %d/%d;", id, perResource[id][0], perResource[id][1])
	}
	t.Log(b.String())
}
