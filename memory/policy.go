package memory

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
)

// MinHeadroom is the least the heap may grow past its live data before a collection.
const MinHeadroom = 192 << 20

// fullHeadroom is the live heap up to which the heap may grow by as much again before
// a collection; past it, by half of what it has beyond.
const fullHeadroom = 1 << 30

// Headroom is how far the heap may grow past live bytes of live data before a
// collection: as much again (at least MinHeadroom) up to a live heap of 1 GiB, and
// half of every byte beyond, so that the heap's share of headroom tightens from 100%
// towards 50% as it grows.
func Headroom(live int64) int64 {
	h := min(live, fullHeadroom) + max(0, live-fullHeadroom)/2
	return max(MinHeadroom, h)
}

// Limit is the soft memory limit for a live heap of live bytes under ceiling: the
// live data plus its Headroom, at most ceiling.
func Limit(live, ceiling int64) int64 {
	return min(ceiling, live+Headroom(live))
}

// ErrNoMachineLimit means neither the cgroup nor /proc/meminfo says how much memory
// the machine has.
var ErrNoMachineLimit = errors.New("the machine's memory is not known")

// DefaultCeiling is the ceiling derived from the machine: 90% of the cgroup's memory
// limit if it has one, else 75% of physical memory.
func DefaultCeiling() (int64, error) {
	if limit, ok := cgroupLimit(); ok {
		return limit / 10 * 9, nil
	}
	total, err := physicalMemory()
	if err != nil {
		return 0, err
	}
	return total / 4 * 3, nil
}

// cgroupLimit reads the memory limit of the process's cgroup (v2, else v1); false if
// there is none.
func cgroupLimit() (int64, bool) {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		// "max", or a number so large it means none (v1 writes the page-rounded
		// maximum).
		if err != nil || n <= 0 || n >= math.MaxInt64/2 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// physicalMemory reads MemTotal from /proc/meminfo.
func physicalMemory() (int64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNoMachineLimit, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				break
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("%w: no MemTotal in /proc/meminfo", ErrNoMachineLimit)
}

// Apply turns the process's GC percent off (unless GOGC is set), so that collections
// run when the heap reaches the soft memory limit, and keeps that limit at
// Limit(live heap, ceiling) after every collection (unless GOMEMLIMIT is set), until
// stop is called. Call it once per process.
func Apply(ceiling int64) (stop func()) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(-1)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	f := &follower{ceiling: ceiling}
	f.set()
	f.arm()
	return func() { f.stopped.Store(true) }
}

// follower sets the limit after each collection: a cleanup on an object allocated
// for the purpose runs after the collection that finds it unreachable, and arms the
// next one. The runtime's cleanup goroutine runs it; there is no loop to stop.
type follower struct {
	ceiling int64
	stopped atomic.Bool
}

// sentinel is allocated only to be collected; its pointer keeps it out of the tiny
// allocator, which would tie it to other objects.
type sentinel struct{ _ *int }

func (f *follower) arm() {
	runtime.AddCleanup(new(sentinel), func(f *follower) {
		if f.stopped.Load() {
			return
		}
		f.set()
		f.arm()
	}, f)
}

// liveHeap is the heap the last collection found live.
var liveSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

func (f *follower) set() {
	s := make([]metrics.Sample, 1)
	copy(s, liveSample)
	metrics.Read(s)
	live := int64(0)
	if s[0].Value.Kind() == metrics.KindUint64 {
		live = int64(s[0].Value.Uint64())
	}
	debug.SetMemoryLimit(Limit(live, f.ceiling))
}
