// Package tcpgate is the network partition of the tests: a loopback port that
// forwards TCP connections to an etcd (or any) endpoint while open, and that, cut,
// closes every connection it carries and refuses new ones until healed.
//
// It owns only that forwarding; it must not import the server's packages or start
// anything but its own accept loop, which ends with the test.
package tcpgate
