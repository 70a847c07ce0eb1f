package hostile

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// stalledUploads is how many requests mallory leaves without their bodies.
const stalledUploads = 300

// One user's 300 uploads that never send their bodies leave another user served
// while they wait, and each is answered by the request timeout (plus 5 s): a 504 for
// those read until it, a 429 at once for those past the user's cap on bodies still
// arriving. The connections are HTTP/1.1, whose unread bodies net/http would otherwise
// wait on before it answers.
func TestStalledUploads(t *testing.T) {
	tg := startConcord(t, "--request-timeout", requestTimeout.String())
	mallory := tg.asUser(t, "mallory")
	alice := tg.asUser(t, "alice")
	before := timeRequests(t, alice, 20)

	// The connections are made first: 300 TLS handshakes on a loaded machine can take
	// longer than the request timeout, and the uploads are to wait together.
	conns := make([]net.Conn, stalledUploads)
	for i := range conns {
		conns[i] = mallory.dial(t)
	}
	results := make(chan stalled, stalledUploads)
	var sent sync.WaitGroup
	for i, conn := range conns {
		sent.Add(1)
		go func() {
			body := configMapJSON(fmt.Sprint("stalled-", i))
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				cms, tg.host, len(body), body[:len(body)/2])
			start := time.Now()
			sent.Done()
			_ = conn.SetReadDeadline(start.Add(requestTimeout + 5*time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				results <- stalled{sent: start, done: time.Now()}
				return
			}
			_ = resp.Body.Close()
			results <- stalled{code: resp.StatusCode, sent: start, done: time.Now()}
		}()
	}
	sent.Wait()
	during := timeRequests(t, alice, 20)
	t.Logf("alice's requests (median, max): %v, %v before mallory's %d stalled uploads; %v, %v while they wait",
		median(before), slices.Max(before), stalledUploads, median(during), slices.Max(during))

	codes := map[int]int{}
	all := make([]stalled, 0, stalledUploads)
	for range stalledUploads {
		r := <-results
		codes[r.code]++
		all = append(all, r)
		if r.code == 0 {
			t.Errorf("a stalled upload was not answered within the request timeout (%v) and 5s", requestTimeout)
		}
	}
	t.Logf("mallory's stalled uploads were answered: %v", codes)
	perUser := (400 + 200) / 4 // a quarter of the in-flight limit's default
	// An upload sent after the first timed-out one was answered may take the place it
	// freed: on a machine slow enough to spread the uploads over the request timeout,
	// those may be read (504) rather than refused (429).
	late := lateUploads(all)
	if n := codes[http.StatusGatewayTimeout]; n < perUser || n > perUser+late || codes[http.StatusTooManyRequests] != stalledUploads-n {
		t.Errorf("stalled uploads answered %v, want %d 504s (the per-user cap; %d sent after the first 504 may add to it) and the rest 429",
			codes, perUser, late)
	}
	// Nothing half-sent was stored.
	for _, name := range tg.names(t, cms) {
		if strings.HasPrefix(name, "stalled-") {
			t.Errorf("configmap %s, half sent, was stored", name)
		}
	}
}

// names lists the names of the objects at path, a collection.
func (tg *target) names(t *testing.T, path string) []string {
	t.Helper()
	resp, err := tg.do(t.Context(), http.MethodGet, path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	var out []string
	for _, i := range list.Items {
		out = append(out, i.Metadata.Name)
	}
	return out
}

// asUser is a target speaking as user, with a client certificate the cluster CA
// signed (concord kubeconfig), allowed to edit in ns.
func (tg *target) asUser(t *testing.T, user string) *target {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), user+".kubeconfig")
	out, err := exec.CommandContext(t.Context(), concordBinary, "kubeconfig", "--data-dir", tg.dataDir,
		"--user", user, "--server", tg.cfg.Host, "--out", kubeconfig).CombinedOutput()
	if err != nil {
		t.Fatalf("concord kubeconfig: %v\n%s", err, out)
	}
	setup(t, tg, createNamespace(ns, ""))
	setup(t, tg, call(http.MethodPost, "/apis/rbac.authorization.k8s.io/v1/namespaces/"+ns+"/rolebindings", jsonType,
		fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":%q},`+
			`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},`+
			`"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":%q}]}`, user, user)))
	u := newTarget(t, user, kubeconfig)
	// The grant reaches the authorizer through its informer.
	waitFor(t, 30*time.Second, func() bool { return send(t, u, get(cms)).Code == http.StatusOK })
	return u
}

// timeRequests makes n creations and n reads as tg and returns how long each took; it
// fails the test if one fails.
func timeRequests(t *testing.T, tg *target, n int) []time.Duration {
	t.Helper()
	var took []time.Duration
	for i := range n {
		name := tg.name + "-" + strconv.Itoa(i) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		for _, r := range []request{createConfigMap(name), get(cms + "/" + name)} {
			start := time.Now()
			if a := send(t, tg, r); a.Code >= 300 {
				t.Fatalf("%s's %s %s: %d %s", tg.name, r.method, r.path, a.Code, a.Message)
			}
			took = append(took, time.Since(start))
		}
	}
	return took
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// stalled is how one stalled upload was answered (code 0: it was not), and when it
// was sent and answered.
type stalled struct {
	code       int
	sent, done time.Time
}

// lateUploads counts the uploads sent after the first answer to one that was read
// until the request timeout (a 504).
func lateUploads(uploads []stalled) int {
	var first time.Time
	for _, u := range uploads {
		if u.code == http.StatusGatewayTimeout && (first.IsZero() || u.done.Before(first)) {
			first = u.done
		}
	}
	late := 0
	for _, u := range uploads {
		if !first.IsZero() && u.sent.After(first) {
			late++
		}
	}
	return late
}
