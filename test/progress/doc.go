// Package progress is the one wait of the process-level and integration tests for
// work whose duration is a figure of the machine: a migration, a collection, a
// binary's start. Wait polls a condition and gives up only when the work has stopped
// moving (the condition's mark, say objects left or a process's CPU ticks, unchanged
// for a stall) or, if a bound is given, after the bound: slow work on a loaded
// machine is waited for, and a hang still ends with the test's own message.
//
// It owns only that wait; it must not import the server's packages or start
// anything.
package progress
