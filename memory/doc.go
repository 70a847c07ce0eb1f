// Package memory is the memory policy of a Concord server process: how much the Go
// heap may grow past its live data before the garbage collector runs, and the most
// the process may use.
//
// An API server's live heap is small next to its machine, and most of what a request
// allocates is garbage the moment it is answered. The collector's CPU is then its
// mark work (which grows with the live heap) times how often it runs (the allocation
// rate over the headroom, how far the heap may grow past its live data): a fixed GC
// percent lets a heap of gigabytes grow by gigabytes, and one request that allocates
// much (a 3 MiB object of 200,000 keys allocates about 480 MB on its way to etcd)
// grows a small process by hundreds of megabytes. So there is no GC percent: the
// collector runs when the heap reaches a soft memory limit
// (runtime/debug.SetMemoryLimit) that rides above the live heap and is set again after
// every collection: live data plus headroom (Headroom: as much again, at least
// MinHeadroom, up to 1 GiB of live data, then half of every byte beyond, so that the
// heap's headroom tightens from 100% towards 50% of its size), never above the
// ceiling.
//
// The ceiling is --memory-limit, or else derived from the machine: 90% of the
// cgroup's memory limit if it has one, else 75% of physical memory. GOGC and
// GOMEMLIMIT in the environment win, as for any Go program: GOGC sets a GC percent
// (the collector then runs at whichever comes first, that percent or the limit),
// GOMEMLIMIT a fixed limit instead of the one that follows the live heap.
//
// It owns only these process-wide runtime settings: a `concord server` process sets
// them once (Apply), before it starts the server; tests that run servers inside their
// own process leave them alone. It must not touch what the server caches or how
// (the watch cache has its own bound, --watch-cache-memory-limit).
package memory
