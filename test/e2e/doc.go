// Package e2e drives Concord the way users do: kubectl from PATH against servers
// started by package harness, and the concord binary itself (the README's HA recipe).
// Tests that need kubectl skip, saying so, when it is not on PATH.
package e2e
