package builtin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/concordproject/concord/apiextensions"
	"github.com/concordproject/concord/builtin"
	"github.com/concordproject/concord/catalog"
	"github.com/concordproject/concord/compatibility"
	"github.com/concordproject/concord/kubesemantics"
	"github.com/concordproject/concord/openapi"
	"github.com/concordproject/concord/registry"
)

// builtinRegistry is a registry of a default server's built-in resources, with
// kube's semantics, as controlplane assembles it.
func builtinRegistry(tb testing.TB) *registry.Registry {
	tb.Helper()
	cat, err := catalog.Default()
	if err != nil {
		tb.Fatal(err)
	}
	versions := compatibility.Default(cat.BinaryVersion())
	rs, err := compatibility.Resources(cat, versions)
	if err != nil {
		tb.Fatal(err)
	}
	gates, err := kubesemantics.NewGates(versions.Emulation, versions.MinCompatibility, nil)
	if err != nil {
		tb.Fatal(err)
	}
	rs, err = builtin.Configure(rs, builtin.Options{Semantics: kubesemantics.New(gates)})
	if err != nil {
		tb.Fatal(err)
	}
	reg := registry.New()
	for _, r := range append(rs, apiextensions.Resource()) {
		if err := reg.Put(context.Background(), r); err != nil {
			tb.Fatal(err)
		}
	}
	return reg
}

// BenchmarkOpenAPIBuild measures a server's first answer of /openapi/v2, which builds every
// document (v2 and each group-version's v3) of the built-in resources, from resources
// fresh from the catalog (no model cached on them), and reports the v2 document's
// size as JSON and the process's CPU time per build (user and system, all threads).
//
//	go test ./builtin -run '^$' -bench OpenAPIBuild -benchtime 10x
func BenchmarkOpenAPIBuild(b *testing.B) {
	builtinRegistry(b) // the process-wide caches (the catalog, kube's definitions)
	size, cpu := 0, time.Duration(0)
	for b.Loop() {
		b.StopTimer()
		reg := builtinRegistry(b)
		mux := http.NewServeMux()
		svc := openapi.New(reg)
		svc.InstallV2(mux)
		svc.InstallV3(mux)
		b.StartTimer()
		before := cpuTime(b)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, openapi.V2Path, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d", openapi.V2Path, rec.Code)
		}
		cpu += cpuTime(b) - before
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size), "v2-bytes")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}

// cpuTime is the CPU time the process has used so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
