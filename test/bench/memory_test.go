package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/rest"
)

// liveHeap makes a server collect its garbage and returns the bytes its heap then
// holds: HeapAlloc of the heap profile's text form (/debug/pprof/heap?gc=1&debug=1),
// which Concord and kube-apiserver both serve to an administrator.
func liveHeap(ctx context.Context, rc rest.Interface) (int64, error) {
	body, err := rc.Get().AbsPath("/debug/pprof/heap").Param("gc", "1").Param("debug", "1").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("heap profile: %w", err)
	}
	return heapAlloc(body)
}

// heapAlloc returns the "# HeapAlloc = N" figure of a heap profile's text form.
func heapAlloc(profile []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(profile))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no HeapAlloc in the heap profile")
}

// metricSum returns the sum of every sample of a metric family in a Prometheus text
// exposition, and whether there was any.
func metricSum(exposition []byte, name string) (float64, bool) {
	var sum float64
	found := false
	for line := range bytes.Lines(exposition) {
		rest, ok := bytes.CutPrefix(line, []byte(name))
		if !ok || len(rest) == 0 || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		fields := strings.Fields(string(rest[bytes.LastIndexByte(rest, '}')+1:]))
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			sum, found = sum+v, true
		}
	}
	return sum, found
}

// rssSampler reads a process's resident memory every few milliseconds, keeping the
// highest reading, until stopped.
type rssSampler struct {
	stopOnce sync.Once
	stopped  chan struct{}
	done     chan struct{}
	peak     int64 // KiB
	peakAnon int64 // KiB, of anonymous memory
	err      error
}

// sampleRSS starts sampling the resident memory of process pid.
func sampleRSS(pid int) *rssSampler {
	s := &rssSampler{stopped: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			rss, anon, err := residentMemory(pid)
			if err != nil {
				s.err = err
				return
			}
			s.peak, s.peakAnon = max(s.peak, rss), max(s.peakAnon, anon)
			select {
			case <-s.stopped:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the peak resident memory, in KiB, all of it
// and of anonymous memory.
func (s *rssSampler) stop() (peak, peakAnon int64, err error) {
	s.stopOnce.Do(func() { close(s.stopped) })
	<-s.done
	return s.peak, s.peakAnon, s.err
}

// seedRaw writes n keys straight into etcd, in transactions of seedBatch puts made by
// four goroutines: key(i) with value(i), for i in [from, n).
func seedRaw(ctx context.Context, kv *clientv3.Client, from, n int, key, value func(i int) string) error {
	var mu sync.Mutex
	next := from
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				mu.Lock()
				start := next
				next += seedBatch
				mu.Unlock()
				if start >= n {
					return
				}
				ops := make([]clientv3.Op, 0, seedBatch)
				for i := start; i < min(start+seedBatch, n); i++ {
					ops = append(ops, clientv3.OpPut(key(i), value(i)))
				}
				if _, err := kv.Txn(ctx).Then(ops...).Commit(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}
