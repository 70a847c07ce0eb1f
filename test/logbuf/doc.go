// Package logbuf holds what a test captures from something that runs beside it: a
// child process's standard output and error, or klog's output. Buffer may be written
// by that process or goroutine while the test reads it, to wait on progress or to
// show the last lines when it fails.
//
// It owns only that buffer; it must not import the server's packages or start
// anything.
package logbuf
