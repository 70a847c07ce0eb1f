// Package integration holds black-box tests of whole Concord clusters: real etcd, real
// servers over TLS, real client-go clients, all started with package harness.
//
// Every test calls t.Parallel, and the package runs four at a time by default
// (TestMain): they mostly wait on their clusters. A test starts a cluster of its own,
// unless it keeps to a namespace of its own and to what no other test looks at: such
// tests share one cluster per size, as the subtests of TestOnOneServer and
// TestOnTwoServers (shared_test.go says what they may not do). A cluster's start costs
// more CPU than most of these tests. A test stays
// serial only when it touches what the whole process shares (client-go's feature gates,
// the count of goroutines) or counts what its cluster does in the background over a
// window that other tests' load would stretch; serial tests run first, alone.
package integration
