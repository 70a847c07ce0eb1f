// Package ports hands out loopback TCP ports for the servers and processes tests
// start: below the kernel's ephemeral range, and reserved for the calling process
// against every other test process on the machine (a lock per port), so that two
// test runs at once never start servers on one port.
//
// It is a leaf of the standard library alone, so that a test package that only
// starts processes (the binary, kube-apiserver) does not link the server's packages
// to get a port. It must not import anything of the module.
package ports
