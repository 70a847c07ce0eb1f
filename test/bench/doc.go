// Package bench measures what a request through Concord costs compared with the same
// work done directly against etcd, and how long the server takes to become ready.
//
// It holds benchmarks only. A plain `go test ./...` compiles them and runs a few
// millisecond-long unit tests of the measuring helpers; it builds nothing and starts
// no process. The measurements run only with -bench:
//
//	go test ./test/bench -run '^$' -bench . -benchtime 2s -timeout 30m
//
// BenchmarkConcord builds cmd/concord once, starts `concord etcd` and `concord server`
// as two processes on loopback ports, and runs, for each concurrency c in 1, 8 and 32
// (b.N operations split over c goroutines sharing one client):
//
//   - etcd-put, etcd-txn: raw etcd puts and create-if-absent transactions of
//     ConfigMaps with the content the server stores for them (1 KiB);
//   - create, get: the same objects created and read through the server with a
//     client-go clientset (no client-side rate limit);
//   - update: an unconditional update of one of 100 such objects (a label that
//     changes every time);
//   - etcd-get, etcd-range, list: raw reads of one key and of a namespace of 100
//     objects, and the server's list of that namespace;
//   - etcd-watch, watch: c watchers, raw on etcd or through the server, receiving the
//     same creations, written straight to etcd 100 per transaction so that the writer
//     is not the limit (an op is one delivered event);
//   - floor-create, floor-get: the create and get through test/bench/floor, the least
//     a Go HTTPS server must do to answer them (the etcd request and nothing else):
//     the ceiling of the server's ratios on the machine they run on.
//
// Every sub-benchmark reports ops/s, p50 and p99 latency, and the CPU that the server,
// etcd and the benchmark process itself spent per operation, read from
// /proc/<pid>/stat before and after the timed loop. When all have run it prints the
// ratios of server to raw etcd throughput per concurrency. The ready sub-benchmarks
// time `concord server` from exec to the first 200 from /readyz on an existing data
// dir, with its embedded etcd and against the external one.
//
// -concord.binary runs a given binary instead of building one (to keep its symbols
// for perf report); -concord.etcd-unsafe-no-fsync starts etcd without fsync.
//
// BenchmarkReadPath compares Concord with a real kube-apiserver (test/kubepeer's
// build of -kube.release, or -kube.apiserver) in one run, on the same etcd (the peer
// under /kube-registry) and with the same client-go clientsets: for each
// -readpath.sizes N, N ConfigMaps seeded with creates at c=32, gets at c=32, full
// lists in pages of 500, and watch fan-outs of -readpath.watchers W watchers each
// receiving 2000 creations; it reports rates, the CPU of server, etcd and client per
// operation, item or event, the bytes and reads the watchers' connections carried,
// and the servers' resident memory, then prints both columns side by side with their
// ratio and what each server answered (content type, protocol, compression).
// -readpath.json or -readpath.protobuf set the clients' ContentType (by default
// client-go's typed clients ask for protobuf, then JSON); -readpath.cpuprofile writes
// a CPU profile of the client during each fan-out, and with -readpath.server-cpuprofile
// one of each server (its /debug/pprof/profile); -readpath.etcd-rate writes the
// fan-out's changes into etcd at that many a second instead of as fast as its writers
// go, so that both servers carry the same load; GODEBUG=http2debug=2 logs the
// HTTP/2 frames the client reads (the servers do not inherit it):
//
//	go test ./test/bench -run '^$' -bench ReadPath -benchtime 1x -timeout 60m
//
// The package measures the binary from outside, as clients do: it must not import
// Concord's server packages (the migration benchmark uses the client-side migrator,
// migration/migrator, as any client would), and it is the only place that knows the
// benchmark's shape. The
// figures and how to read them are in docs/benchmarks.md.
package bench
