// Package integration holds black-box tests of whole Concord clusters: real etcd, real
// servers over TLS, real client-go clients, all started with package harness.
package integration
