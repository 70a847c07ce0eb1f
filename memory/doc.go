// Package memory is the memory policy of a Concord server process: how much the Go
// heap may grow past its live data before the garbage collector runs, and the most
// the process may use.
//
// An API server's live heap is small next to its machine, and most of what a request
// allocates is garbage the moment it is answered. A high GC percent (400) keeps the
// collector's share of each request's CPU low; alone, it also lets the heap grow to
// five times its live data, so that one request that allocates much (a 3 MiB object
// of 200,000 keys allocates about 480 MB on its way to etcd) grows the process by
// hundreds of megabytes, and a heap of gigabytes grows by gigabytes. So a soft memory
// limit (runtime/debug.SetMemoryLimit) rides above the live heap and is set again
// after every collection: live data plus headroom (the larger of MinHeadroom and half
// the live data), never above the ceiling. The collector runs at whichever comes
// first, the GC percent or the limit: small heaps keep their cheap collections,
// bursts are bounded, and a large heap grows by at most half its size.
//
// The ceiling is --memory-limit, or else derived from the machine: 90% of the
// cgroup's memory limit if it has one, else 75% of physical memory. GOGC and
// GOMEMLIMIT in the environment win, as for any Go program: GOGC leaves the GC
// percent alone, GOMEMLIMIT the limit.
//
// It owns only these process-wide runtime settings: a `concord server` process sets
// them once (Apply), before it starts the server; tests that run servers inside their
// own process leave them alone. It must not touch what the server caches or how
// (the watch cache has its own bound, --watch-cache-memory-limit).
package memory
