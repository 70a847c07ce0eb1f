package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The watch cache's estimate of its memory, which its bound (--watch-cache-memory-limit)
// is enforced on, tracks what caching a resource costs the `concord server` process:
// the live heap grows by about the estimate (the stored values, the encodings kept
// for lists, keys and bookkeeping) when a resource of 20 MB starts being cached.
func TestWatchCacheEstimateTracksTheHeap(t *testing.T) {
	t.Parallel()
	k, logs := startServer(t, buildConcord(t))
	kubectlUntil(t, k, logs, "server ready", func(string) bool { return true }, "get", "--raw", "/readyz")
	cfg, err := clientcmd.BuildConfigFromFlags("", k.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "estimate"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Secrets: no controller of the server lists or watches them, so nothing caches
	// them before the test's own list.
	secrets := cs.CoreV1().Secrets("estimate")
	const n, size = 320, 64 << 10
	for i := range n {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("s-", i)},
			Data: map[string][]byte{"payload": bytes.Repeat([]byte{byte('a' + i%26)}, size)}}
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	metric := func() float64 {
		body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return sampleOf(body, `concord_watch_cache_memory_bytes{resource="core/secrets"}`)
	}
	heap := func() float64 {
		body, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").Param("debug", "1").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return sampleOf(body, "# HeapAlloc =")
	}
	if m := metric(); m != 0 {
		t.Fatalf("the secrets are cached (%v bytes) before anything listed them", m)
	}
	before := heap()
	// A whole list starts the cache; the next ones are answered from it, and keep
	// each secret's encoding for the lists after them.
	for range 3 {
		if _, err := secrets.List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The gauge is read from the cache when scraped: it counts what the lists kept.
	estimate := metric()
	if estimate < n*size {
		t.Fatalf("the secrets' cache estimate is %v bytes, want at least their %d bytes of values", estimate, n*size)
	}
	growth := heap() - before
	t.Logf("live heap grew by %.1f MiB; the cache estimates %.1f MiB", growth/(1<<20), estimate/(1<<20))
	if estimate < 0.75*growth || estimate > 1.33*growth {
		t.Fatalf("the cache estimates %.1f MiB; the live heap grew by %.1f MiB", estimate/(1<<20), growth/(1<<20))
	}
}

// sampleOf returns the number after the first line of text that starts with prefix,
// or 0.
func sampleOf(text []byte, prefix string) float64 {
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return 0
}
