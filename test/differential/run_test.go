package differential

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// workers is how many cases run at once (those that are not global).
const workers = 8

// answer is what is recorded of one response.
type answer struct {
	Code   int    `json:"code"`
	Reason string `json:"reason,omitempty"`
	// Causes are a Status's causes, "reason field", sorted.
	Causes []string `json:"causes,omitempty"`
	// Object is the object a successful request answered, normalized.
	Object map[string]any `json:"object,omitempty"`
	// Same, instead of Object, is the 1-based index of an earlier step of the case
	// that answered the same object.
	Same int `json:"same,omitempty"`
	// Message is compared on refusals, digits aside (resourceVersions, ports).
	Message string `json:"message,omitempty"`
}

// setupNamespaces creates the namespace of every namespaced resource's cases and its
// default ServiceAccount (no controller makes it on kube-apiserver without a
// controller manager; a server that made it already answers 409).
func setupNamespaces(t *testing.T, tg *target) {
	t.Helper()
	for _, r := range resources {
		ns := r.namespace()
		if ns == "" {
			continue
		}
		for _, s := range []step{
			{method: http.MethodPost, path: "/api/v1/namespaces", ctype: jsonType,
				body: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}},
			{method: http.MethodPost, path: "/api/v1/namespaces/" + ns + "/serviceaccounts", ctype: jsonType,
				body: map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default"}}},
		} {
			a, _ := send(t.Context(), tg, s, nil)
			if a.Code >= 300 && a.Code != http.StatusConflict {
				t.Fatalf("setup %s %s: %d %s", s.method, s.path, a.Code, a.Message)
			}
		}
	}
}

// runAll runs every case against tg, workers at once: first those that are not
// global, then the global ones, those of a serial kind one at a time (the cases of
// different global kinds do not act on one another's requests). It returns each
// case's answers by id, and logs the slowest cases.
func runAll(t *testing.T, tg *target, cases []tcase) map[string][]answer {
	t.Helper()
	got := make(map[string][]answer, len(cases))
	took := map[string]time.Duration{}
	defer func() { logSlowest(t, tg, took) }()
	var isolated, units [][]tcase
	global := map[string][]tcase{}
	var kinds []string
	for _, c := range cases {
		switch {
		case !c.global:
			isolated = append(isolated, []tcase{c})
		case global[c.res.kind] == nil:
			kinds = append(kinds, c.res.kind)
			fallthrough
		default:
			global[c.res.kind] = append(global[c.res.kind], c)
		}
	}
	// CustomResourceDefinitions come last: each one's creation and deletion
	// changes what the server serves, which slows down the writes of admission
	// policies and APIServices meanwhile.
	var crds [][]tcase
	for _, k := range kinds {
		for _, c := range global[k] {
			switch {
			case serialKinds[k]:
			case k == "CustomResourceDefinition":
				crds = append(crds, []tcase{c})
			default:
				units = append(units, []tcase{c})
			}
		}
		if serialKinds[k] {
			units = append(units, global[k])
		}
	}
	var mu sync.Mutex
	run := func(unit []tcase) {
		for _, c := range unit {
			start := time.Now()
			answers := runCase(t.Context(), tg, c)
			if c.res.kind == "ResourceQuota" {
				quotasGone(t, tg, c.res)
			}
			mu.Lock()
			got[c.id], took[c.id] = answers, time.Since(start)
			mu.Unlock()
		}
	}
	start := time.Now()
	inParallel(isolated, run)
	second := time.Now()
	inParallel(units, run)
	third := time.Now()
	inParallel(crds, run)
	perKind := map[string]time.Duration{}
	for _, k := range kinds {
		for _, c := range global[k] {
			perKind[k] += took[c.id]
		}
	}
	slowest := sortedByDuration(perKind)[0]
	t.Logf("%s: %d isolated cases in %v, then %d global kinds in %v and CRDs in %v (%s the longest in all: %v)", tg.name,
		len(isolated), second.Sub(start).Round(time.Millisecond), len(kinds)-1, third.Sub(second).Round(time.Millisecond),
		time.Since(third).Round(time.Millisecond), slowest, perKind[slowest].Round(time.Millisecond))
	return got
}

// quotasGone waits until the server's quota admission no longer counts the quotas a
// case of res, ResourceQuotas, deleted: it reads quotas from an informer, which
// sees a deletion after the store does, and until then a quota the next case
// creates may be refused over a deleted one's "resourcequotas: 1". A dry-run
// creation of a quota is refused while one is counted. (kube-apiserver without a
// controller manager enforces no quota: it answers at once.)
func quotasGone(t *testing.T, tg *target, res resource) {
	t.Helper()
	probe := step{method: http.MethodPost, path: res.collection(res.versions[0]) + "?dryRun=All", ctype: jsonType,
		body: map[string]any{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": map[string]any{"name": "probe"},
			"spec": map[string]any{"hard": map[string]any{"pods": "1000"}}}}
	var last answer
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last, _ = send(ctx, tg, probe, nil)
		return last.Code != http.StatusForbidden, nil
	})
	if err != nil {
		// Called from a worker goroutine: Errorf, not Fatalf.
		t.Errorf("%s: the deleted quotas of %s are still counted: %d %s", tg.name, res.namespace(), last.Code, last.Message)
	}
}

// inParallel runs run on every unit, workers at once, and returns when all are done.
func inParallel(units [][]tcase, run func([]tcase)) {
	work := make(chan []tcase)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range work {
				run(u)
			}
		}()
	}
	for _, u := range units {
		work <- u
	}
	close(work)
	wg.Wait()
}

func logSlowest(t *testing.T, tg *target, took map[string]time.Duration) {
	t.Helper()
	var global time.Duration
	for _, d := range took {
		global += d
	}
	ids := sortedByDuration(took)
	var b strings.Builder
	for _, id := range ids[:min(5, len(ids))] {
		fmt.Fprintf(&b, "\n  %v %s", took[id].Round(time.Millisecond), id)
	}
	t.Logf("%s: the cases took %v in all; the slowest:%s", tg.name, global.Round(time.Millisecond), b.String())
}

// sortedByDuration are the keys of m, longest first.
func sortedByDuration(m map[string]time.Duration) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	return keys
}

// runCase sends a case's steps in order, then its cleanup.
func runCase(ctx context.Context, tg *target, c tcase) []answer {
	var out []answer
	var prev map[string]any
	for _, s := range c.steps {
		a, obj := send(ctx, tg, s, prev)
		for i, earlier := range out {
			if a.Object != nil && reflect.DeepEqual(a.Object, earlier.Object) {
				a.Object, a.Same = nil, i+1
				break
			}
		}
		out = append(out, a)
		prev = obj
	}
	for _, s := range c.cleanup {
		_, _ = send(ctx, tg, s, nil)
	}
	return out
}

// send sends a step (its body made from prev when it edits) and returns what is
// recorded of the answer and the object answered (nil when none).
func send(ctx context.Context, tg *target, s step, prev map[string]any) (answer, map[string]any) {
	body := s.body
	if s.edit != nil {
		if prev == nil {
			return answer{Message: "not sent: the step before answered no object"}, nil
		}
		body = s.edit(deepCopy(prev))
	}
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return answer{Message: "not sent: " + err.Error()}, nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	resp, err := tg.do(ctx, s.method, s.path, s.ctype, data)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return answer{Message: "no answer: " + err.Error()}, nil
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{Code: resp.StatusCode, Message: "reading the answer: " + err.Error()}, nil
	}
	return summarize(resp.StatusCode, raw)
}

// summarize reads what is recorded from a response body.
func summarize(code int, data []byte) (answer, map[string]any) {
	a := answer{Code: code}
	var obj map[string]any
	if json.Unmarshal(data, &obj) != nil {
		if code >= 300 {
			a.Message = shorten(strings.TrimSpace(string(data)))
		}
		return a, nil
	}
	if kind, _ := obj["kind"].(string); kind == "Status" {
		a.Reason, _ = obj["reason"].(string)
		msg, _ := obj["message"].(string)
		a.Message = shorten(scrubMessage(msg))
		a.Causes = causes(obj)
		return a, nil
	}
	if code >= 300 {
		return a, nil
	}
	a.Object = normalize(deepCopy(obj))
	return a, obj
}

func shorten(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

func causes(status map[string]any) []string {
	details, _ := status["details"].(map[string]any)
	list, _ := details["causes"].([]any)
	var out []string
	for _, c := range list {
		m, _ := c.(map[string]any)
		out = append(out, fmt.Sprintf("%v %v", m["reason"], m["field"]))
	}
	slices.Sort(out)
	return out
}
