package hostile

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// maxGrowth is how much one request of at most the body limit may grow the server's
// resident memory.
const maxGrowth = 256 << 20

// bomb is a request built to make the server do much work for few bytes.
type bomb struct {
	name  string
	setup []request
	req   request
}

func bombs() []bomb {
	cm := func(name string) []request { return []request{createConfigMap(name)} }
	blobs := "/apis/hostile.example.com/v1/namespaces/" + ns + "/blobs"
	return []bomb{
		{"JSON patch copying a list into itself 12 times", cm("b-copy"), withBody(http.MethodPatch, cms+"/b-copy", jsonPatchType, copyBomb(12))},
		{"JSON patch copying up to its copy limit", cm("b-copy-limit"), withBody(http.MethodPatch, cms+"/b-copy-limit", jsonPatchType, copyBomb(5))},
		{"JSON patch of 60000 operations", cm("b-ops"), withBody(http.MethodPatch, cms+"/b-ops", jsonPatchType, manyOps(60000))},
		{"JSON patch of 10000 additions", cm("b-adds"), withBody(http.MethodPatch, cms+"/b-adds", jsonPatchType, manyAdds(10000, 250))},
		{"JSON nested 1500000 deep", nil, withBody(http.MethodPost, cms, jsonType, deepJSON(1500000))},
		{"merge patch nested 500000 deep", cm("b-merge"), withBody(http.MethodPatch, cms+"/b-merge", mergeType, deepJSONPatch(500000))},
		{"YAML alias bomb", nil, withBody(http.MethodPost, cms, yamlType, yamlAliasBomb)},
		{"YAML nested 1500000 deep", nil, withBody(http.MethodPost, cms, yamlType, deepYAML(1500000))},
		{"CBOR nested 3000000 deep", nil, withBody(http.MethodPost, blobs, cborType, deepCBOR(3000000))},
		{"CBOR declaring 2^32 elements", nil, withBody(http.MethodPost, blobs, cborType, func() []byte { return []byte{0x9b, 0, 0, 0, 1, 0, 0, 0, 0} })},
		{"protobuf declaring 2 GiB", nil, withBody(http.MethodPost, cms, protobufType, func() []byte { return []byte("k8s\x00\x12\xff\xff\xff\xff\x07") })},
		{"a configmap of 200000 keys", nil, withBody(http.MethodPost, cms, jsonType, manyKeys("b-keys", 200000))},
		{"a custom resource of 3 MiB", nil, withBody(http.MethodPost, blobs, jsonType, func() []byte {
			return []byte(fmt.Sprintf(`{"apiVersion":"hostile.example.com/v1","kind":"Blob","metadata":{"name":"b-big"},"blob":%q}`, strings.Repeat("b", 3<<20-200)))
		})},
		{"a body over the limit", nil, withBody(http.MethodPost, cms, jsonType, func() []byte { return bytes.Repeat([]byte(" "), 8<<20) })},
	}
}

// No single request of at most the body limit grows the server's resident memory by
// more than 256 MiB: each bomb is sent alone, and the server's peak resident memory
// (VmHWM, reset before each) is compared with what it held before.
func TestBombsStayBounded(t *testing.T) {
	t.Parallel()
	tg := startConcord(t, "--feature-gates", "CBORServingAndStorage=true")
	setup(t, tg, createNamespace(ns, ""))
	for _, r := range sizeCases()[1].setup { // the Blob custom resource
		setup(t, tg, r)
	}
	for _, b := range bombs() {
		for _, r := range b.setup {
			setup(t, tg, r)
		}
		// Each starts from a collected heap: what the bombs before it left is garbage
		// the server may reuse, not what this one costs.
		collectGarbage(t, tg)
		resetPeak(t, tg.pid)
		before := memory(t, tg.pid, "VmRSS")
		start := time.Now()
		a := send(t, tg, b.req)
		took := time.Since(start)
		peak := memory(t, tg.pid, "VmHWM")
		t.Logf("%-50s %d %-22s in %6v: resident %4d MiB, peak %4d MiB (+%d MiB)", b.name, a.Code, a.Reason, took.Round(time.Millisecond), before>>20, peak>>20, (peak-before)>>20)
		if peak-before > maxGrowth {
			t.Errorf("%s grew the server's resident memory by %d MiB, over %d MiB", b.name, (peak-before)>>20, maxGrowth>>20)
		}
		// No answer within send's minute is unbounded work too (before openapi.Ordered,
		// the ConfigMap of 200,000 keys computed its managed fields for over a minute).
		if a.Code == 0 || a.Code >= 500 {
			t.Errorf("%s: %d %s", b.name, a.Code, a.Message)
		}
	}
}

// collectGarbage has the server collect its garbage: its heap profile does, first.
func collectGarbage(t *testing.T, tg *target) {
	t.Helper()
	resp, err := tg.do(t.Context(), http.MethodGet, "/debug/pprof/heap?gc=1", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the server's heap profile: %d", resp.StatusCode)
	}
}

// resetPeak resets the peak resident memory (VmHWM) of process pid to its current
// resident memory.
func resetPeak(t *testing.T, pid int) {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the server's peak resident memory: %v", err)
	}
}

// memory returns a field of /proc/<pid>/status, in bytes.
func memory(t *testing.T, pid int, field string) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// manyAdds is a JSON patch of n operations, each adding a key of size bytes to data.
func manyAdds(n, size int) func() []byte {
	return func() []byte {
		var b bytes.Buffer
		b.WriteString("[")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"op":"add","path":"/data/k%d","value":%q}`, i, strings.Repeat("v", size))
		}
		b.WriteString("]")
		return b.Bytes()
	}
}
