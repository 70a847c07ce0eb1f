package differential

import (
	"fmt"
	"sort"
	"strings"
	"testing"
)

// TestCorpus checks the corpus without servers: it is generated the same way twice,
// has at least 1,000 cases of which at least 60% generated invalid, and covers every
// resource.
func TestCorpus(t *testing.T) {
	seeds, err := loadSeeds()
	if err != nil {
		t.Fatal(err)
	}
	cases := allCases(seeds)
	checkCorpus(t, cases)
	again := allCases(seeds)
	for i := range cases {
		if cases[i].id != again[i].id || string(marshal(cases[i].steps[0].body)) != string(marshal(again[i].steps[0].body)) {
			t.Fatalf("case %d is %s, then %s: the corpus is not deterministic", i, cases[i].id, again[i].id)
		}
	}
	invalid, steps := 0, 0
	perResource := map[string]int{}
	for _, c := range cases {
		if c.invalid {
			invalid++
		}
		steps += len(c.steps)
		perResource[c.res.id()]++
	}
	if 10*invalid < 6*len(cases) {
		t.Errorf("%d of %d cases are generated invalid, want at least 60%%", invalid, len(cases))
	}
	ids := make([]string, 0, len(perResource))
	for id := range perResource {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, " %s %d;", id, perResource[id])
	}
	t.Logf("%d seeds, %d cases (%d generated invalid, %s), %d steps; per resource:%s",
		len(seeds), len(cases), invalid, pct(invalid, len(cases)), steps, b.String())
}
