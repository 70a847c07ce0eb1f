package storage_test

import (
	"net/http/httptest"
	"testing"

	"github.com/concordproject/concord/etcd/etcdtest"
	"github.com/concordproject/concord/storage"
)

// The etcd check passes while etcd answers, and fails once it cannot be read.
func TestHealthCheck(t *testing.T) {
	client := etcdtest.Start(t)
	check := storage.New(client, "/registry").HealthCheck()
	if check.Name() != "etcd" {
		t.Errorf("check named %q, want etcd (kube-apiserver's name)", check.Name())
	}
	r := httptest.NewRequestWithContext(t.Context(), "GET", "/readyz/etcd", nil)
	if err := check.Check(r); err != nil {
		t.Fatalf("etcd answers, the check fails: %v", err)
	}
	_ = client.Close()
	if err := check.Check(r); err == nil {
		t.Fatal("the check passes with its client closed")
	}
}
