// Package h2settings reads what an HTTP/2 server announces in its first SETTINGS
// frame, so that tests can hold Concord's serving settings to kube-apiserver's: the
// same function reads both.
//
// It owns only that read. It must not import the server's packages, so that a test
// package that only starts processes (kube-apiserver) does not link them.
package h2settings
