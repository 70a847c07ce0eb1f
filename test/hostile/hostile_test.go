package hostile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// request is one HTTP request of a case, sent as the admin.
type request struct {
	method, path string
	// ctype is the Content-Type ("" sends none).
	ctype string
	// header holds more headers; an empty value keeps Go from sending its default
	// (User-Agent).
	header map[string]string
	// body makes the body (nil: none).
	body func() []byte
	// stall sends the headers and the first half of the body on a raw connection,
	// then waits for the answer without sending the rest.
	stall bool
	// stream reads a watch to its end: Ended records whether it ended by itself.
	stream bool
	// pick are paths (a.b[0].c) of the answer's object whose values are recorded.
	pick []string
	// count records how many items a list answer holds (lists of what earlier cases
	// left behind are not counted: the servers' own objects differ).
	count bool
	// until, for a setup request, is the code it is repeated until (a CRD's
	// resources being served).
	until int
}

// hostileCase is a hostile request, what it needs first, and what is read after it
// to see what it left behind.
type hostileCase struct {
	name  string
	setup []request
	req   request
	// checks are read after req; their answers are recorded too.
	checks []request
	// deviation, when set, says why Concord answers otherwise than kube-apiserver;
	// want is then Concord's answer (checks are still compared with the recording).
	deviation string
	want      *answer
}

// answer is what is compared of a response.
type answer struct {
	Code   int    `json:"code"`
	Kind   string `json:"kind,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Causes are a Status's causes, "type field", sorted.
	Causes []string          `json:"causes,omitempty"`
	Items  *int              `json:"items,omitempty"`
	Fields map[string]string `json:"fields,omitempty"`
	Ended  *bool             `json:"ended,omitempty"`
	// Message is kept for the reader of the recording; it is not compared.
	Message string `json:"message,omitempty"`
}

// recorded is what one case got.
type recorded struct {
	Answer answer   `json:"answer"`
	Checks []answer `json:"checks,omitempty"`
}

func recordingPath() string { return filepath.Join("testdata", "kube-"+peerRelease+".json") }

// TestHostileInput sends every case to the concord binary and compares each answer
// with kube-apiserver's recorded one; with -rewrite it sends them to a kube-apiserver
// peer instead and records its answers.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	want := map[string]recorded{}
	// Stalled requests go to a server whose request timeout is requestTimeout, the
	// others to one with the default (kube-apiserver's, a minute), for concord and
	// for the peer alike.
	var tg, stallTarget *target
	if *rewrite {
		tg = startPeer(t)
		stallTarget = startPeer(t, "--request-timeout="+requestTimeout.String())
		setup(t, stallTarget, createNamespace(ns, ""))
	} else {
		data, err := os.ReadFile(recordingPath())
		if err != nil {
			t.Fatalf("%v (record it: go test ./test/hostile -run TestHostileInput -args -rewrite)", err)
		}
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		tg = startConcord(t)
		stallTarget = startConcord(t, "--request-timeout", requestTimeout.String())
		setup(t, stallTarget, createNamespace(ns, ""))
	}
	setup(t, tg, createNamespace(ns, ""))
	got := map[string]recorded{}
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			tg := tg
			if c.req.stall {
				tg = stallTarget
			}
			for _, r := range c.setup {
				setup(t, tg, r)
			}
			rec := recorded{Answer: send(t, tg, c.req)}
			for _, r := range c.checks {
				rec.Checks = append(rec.Checks, send(t, tg, r))
			}
			got[c.name] = rec
			if *rewrite {
				return
			}
			compare(t, c, rec, want)
		})
	}
	if *rewrite {
		data, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(recordingPath(), append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %d cases from kube-apiserver %s in %s", len(got), peerRelease, recordingPath())
	}
}

// compare fails t for every way rec differs from the recording (or from the case's
// own want, for a deviation).
func compare(t *testing.T, c hostileCase, rec recorded, all map[string]recorded) {
	t.Helper()
	kube, ok := all[c.name]
	if !ok {
		t.Fatalf("no recorded answer: rerun with -rewrite against kube-apiserver %s", peerRelease)
	}
	wantAnswer := kube.Answer
	if c.deviation != "" {
		wantAnswer = *c.want
		t.Logf("deviation from kube-apiserver (%d %s): %s", kube.Answer.Code, kube.Answer.Reason, c.deviation)
	}
	if c.req.method == http.MethodHead {
		// A HEAD answer has no body, so neither answer can be a Status.
		rec.Answer.Kind, wantAnswer.Kind = "(HEAD)", "(HEAD)"
	}
	for _, d := range differences(rec.Answer, wantAnswer) {
		t.Errorf("answer: %s (concord said %q; kube-apiserver %q)", d, rec.Answer.Message, kube.Answer.Message)
	}
	if len(rec.Checks) != len(kube.Checks) {
		t.Fatalf("%d checks, %d recorded: rerun with -rewrite", len(rec.Checks), len(kube.Checks))
	}
	for i := range rec.Checks {
		for _, d := range differences(rec.Checks[i], kube.Checks[i]) {
			t.Errorf("check %d (%s %s): %s", i, c.checks[i].method, c.checks[i].path, d)
		}
	}
}

// differences lists how got differs from want in what is compared: the code; the
// reason and causes when want is a Status; the kind when want is an object; and that
// an error is always a Status, even where kube-apiserver answers plain text.
func differences(got, want answer) []string {
	var out []string
	if got.Code != want.Code {
		out = append(out, fmt.Sprintf("code %d, want %d", got.Code, want.Code))
	}
	switch {
	case want.Kind == "Status":
		if got.Kind != "Status" {
			out = append(out, fmt.Sprintf("body %q, want a Status", got.Kind))
		}
		if got.Reason != want.Reason {
			out = append(out, fmt.Sprintf("reason %q, want %q", got.Reason, want.Reason))
		}
		if !slices.Equal(got.Causes, want.Causes) {
			out = append(out, fmt.Sprintf("causes %q, want %q", got.Causes, want.Causes))
		}
	case want.Kind != "":
		if got.Kind != want.Kind {
			out = append(out, fmt.Sprintf("body of kind %q, want %q", got.Kind, want.Kind))
		}
	case want.Code >= 400 && got.Kind != "Status":
		out = append(out, fmt.Sprintf("body of kind %q, want a Status", got.Kind))
	}
	if fmt.Sprint(deref(got.Items)) != fmt.Sprint(deref(want.Items)) {
		out = append(out, fmt.Sprintf("%v items, want %v", deref(got.Items), deref(want.Items)))
	}
	for k, v := range want.Fields {
		if got.Fields[k] != v {
			out = append(out, fmt.Sprintf("%s = %q, want %q", k, got.Fields[k], v))
		}
	}
	if fmt.Sprint(deref(got.Ended)) != fmt.Sprint(deref(want.Ended)) {
		out = append(out, fmt.Sprintf("stream ended %v, want %v", deref(got.Ended), deref(want.Ended)))
	}
	return out
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// setup sends a request a case needs first: it must succeed (or find its object
// there already).
func setup(t *testing.T, tg *target, r request) {
	t.Helper()
	if r.until != 0 {
		waitFor(t, 60*time.Second, func() bool { return send(t, tg, r).Code == r.until })
		return
	}
	if a := send(t, tg, r); a.Code >= 300 && a.Code != http.StatusConflict {
		t.Fatalf("setup %s %s: %d %s", r.method, r.path, a.Code, a.Message)
	}
}

// send sends r and summarizes the response.
func send(t *testing.T, tg *target, r request) answer {
	t.Helper()
	if r.stall {
		return sendStalled(t, tg, r)
	}
	limit := 60 * time.Second
	if r.stream {
		limit = 15 * time.Second
	}
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	header := http.Header{}
	if r.ctype != "" {
		header.Set("Content-Type", r.ctype)
	}
	for k, v := range r.header {
		header[http.CanonicalHeaderKey(k)] = []string{v}
	}
	var body []byte
	if r.body != nil {
		body = r.body()
	}
	resp, err := tg.do(ctx, r.method, r.path, header, body)
	if err != nil {
		// No answer at all (kube-apiserver resets the stream of a request whose
		// handler panicked): code 0.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return answer{Message: "no answer: " + err.Error()}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	a := summarize(resp.StatusCode, data, r.pick, r.count)
	if r.stream {
		ended := err == nil
		a.Ended = &ended
	} else if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", r.method, r.path, err)
	}
	return a
}

// sendStalled sends r's headers and the first half of its body, then waits for the
// answer without sending the rest (HTTP/2, as kubectl and client-go speak).
func sendStalled(t *testing.T, tg *target, r request) answer {
	t.Helper()
	body := r.body()
	ctx, cancel := context.WithTimeout(t.Context(), requestTimeout+10*time.Second)
	defer cancel()
	never, stop := io.Pipe()
	defer stop.Close()
	req, err := http.NewRequestWithContext(ctx, r.method, tg.cfg.Host+r.path, io.MultiReader(bytes.NewReader(body[:len(body)/2]), never))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", r.ctype)
	resp, err := tg.client.Do(req)
	if err != nil {
		t.Fatalf("a stalled %s %s was not answered within the request timeout and 10s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return summarize(resp.StatusCode, data, r.pick, r.count)
}

// summarize reads what is compared from a response body.
func summarize(code int, data []byte, pick []string, count bool) answer {
	a := answer{Code: code}
	var obj map[string]any
	if json.Unmarshal(data, &obj) != nil {
		if code >= 400 {
			a.Message = strings.TrimSpace(string(data))
		}
		return a
	}
	a.Kind, _ = obj["kind"].(string)
	if a.Kind == "Status" {
		a.Reason, _ = obj["reason"].(string)
		a.Message, _ = obj["message"].(string)
		a.Causes = causes(obj)
	}
	if items, ok := obj["items"].([]any); ok && count {
		n := len(items)
		a.Items = &n
	}
	for _, p := range pick {
		if a.Fields == nil {
			a.Fields = map[string]string{}
		}
		a.Fields[p] = fmt.Sprint(lookup(obj, p))
	}
	return a
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

// lookup follows a path of field names and [index]es through decoded JSON; nil
// where it leads nowhere.
func lookup(v any, path string) any {
	for _, part := range strings.Split(path, ".") {
		name, index, indexed := strings.Cut(part, "[")
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[name]
		if indexed {
			i, err := strconv.Atoi(strings.TrimSuffix(index, "]"))
			list, ok := v.([]any)
			if err != nil || !ok || i >= len(list) {
				return nil
			}
			v = list[i]
		}
	}
	return v
}
