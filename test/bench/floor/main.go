// Command floor is the transport floor of the benchmark: the least work any API server
// written in Go must do to answer client-go's ConfigMap create and get over HTTPS.
//
// It serves exactly two routes, with Go's net/http (HTTP/2 over TLS, as every
// Kubernetes-style server does) and the etcd client every such server uses:
//
//   - POST /api/v1/namespaces/<ns>/configmaps: reads the request body, writes a
//     stored-size value with the create-if-absent transaction of the etcd-txn
//     sub-benchmark under a fresh key, and answers 201 with a fixed ConfigMap;
//   - GET /api/v1/namespaces/<ns>/configmaps/<name>: reads the object's key from etcd
//     and answers 200 with the stored bytes as they are.
//
// It decodes, validates, authenticates and converts nothing, so no server that does
// those things can be faster than it: the benchmark's floor-create and floor-get
// figures are the ceiling for the create and get ratios on the machine they run on.
// It is not part of Concord and must never be: it is a measuring instrument.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func main() {
	etcd := flag.String("etcd", "", "etcd client URL")
	prefix := flag.String("etcd-prefix", "/registry", "the key prefix of the objects")
	addr := flag.String("listen", "127.0.0.1:0", "address to serve HTTPS on")
	cert := flag.String("tls-cert-file", "", "serving certificate")
	key := flag.String("tls-private-key-file", "", "serving key")
	valueSize := flag.Int("value-size", 1024, "size of the values created")
	flag.Parse()

	kv, err := clientv3.New(clientv3.Config{Endpoints: []string{*etcd}, DialTimeout: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	value := strings.Repeat("x", *valueSize)
	// created is the answer to every create: a ConfigMap of the created objects' size.
	created := []byte(fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"floor","namespace":"floor","resourceVersion":"1"},"data":{"payload":%q}}`,
		strings.Repeat("x", *valueSize-140)))
	var seq atomic.Int64

	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/namespaces/{ns}/configmaps", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		k := fmt.Sprintf("%s/floor/configmaps/%s/f-%08d", *prefix, r.PathValue("ns"), seq.Add(1))
		resp, err := kv.Txn(r.Context()).
			If(clientv3.Compare(clientv3.ModRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, value)).
			Commit()
		if err != nil || !resp.Succeeded {
			http.Error(w, fmt.Sprint("create failed: ", err), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(created)
	})
	mux.HandleFunc("GET /api/v1/namespaces/{ns}/configmaps/{name}", func(w http.ResponseWriter, r *http.Request) {
		resp, err := kv.Get(r.Context(), *prefix+"/core/configmaps/"+r.PathValue("ns")+"/"+r.PathValue("name"))
		if err != nil || len(resp.Kvs) != 1 {
			http.Error(w, fmt.Sprint("get failed: ", err), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(resp.Kvs[0].Value)
	})
	srv := &http.Server{Addr: *addr, Handler: mux, TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12}}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	log.Printf("floor serving on %s", *addr)
	if err := srv.ListenAndServeTLS(*cert, *key); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}
