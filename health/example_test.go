package health_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/concordproject/concord/health"
)

// A server that is live but not yet ready: its bootstrap hook is still retrying.
func Example() {
	probes := health.New(nil)
	bootstrap := health.NewPostStartHook("bootstrap")
	if err := probes.AddLivez(health.Ping()); err != nil {
		panic(err)
	}
	if err := probes.AddReadyz(health.Ping(), bootstrap); err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	probes.Install(mux)

	probe := func(path string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Printf("GET %s: %d\n%s\n", path, rec.Code, rec.Body)
	}
	bootstrap.Fail(errors.New("etcd not reachable"))
	probe("/livez")
	probe("/readyz")
	probe("/readyz/poststarthook/bootstrap")
	bootstrap.Done()
	probe("/readyz")

	// Output:
	// GET /livez: 200
	// ok
	// GET /readyz: 500
	// [+]ping ok
	// [-]poststarthook/bootstrap failed: reason withheld
	// [+]shutdown ok
	// readyz check failed
	//
	// GET /readyz/poststarthook/bootstrap: 500
	// internal server error: not finished: etcd not reachable
	//
	// GET /readyz: 200
	// ok
}
