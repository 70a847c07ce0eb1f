// Package binary gives process-level tests the executables they start: the concord
// binary (and any other command of the module) built once per checkout and source
// state, and shared by every test package of a `go test ./...` run.
//
// Each package that starts the binary used to build its own copy, a link of the whole
// server each time. Install lets `go install` decide instead (without DWARF, as the
// README's test command links test binaries): it links into one
// directory per checkout, under a lock that other test processes wait on, and does
// nothing when the installed executable is already the one the sources make (Go
// compares the build ID it embeds). A later run with changed sources links again; a
// running process keeps the file it started from, because the go command replaces the
// executable rather than writing into it.
//
// CPUTicks reads how much CPU a started process has used, the progress a test waits
// on while a process starts slowly on a loaded machine and logs nothing yet.
//
// It owns only that directory and its lock; it starts nothing and must not import the
// server's packages.
package binary
