// Package logs is how a Concord server process logs: klog, at the verbosity of -v
// and --vmodule, in the format of --logging-format (klog's text lines, or JSON lines
// through logr's funcr), as component-base/logs is kube-apiserver's option group.
//
// It owns these flags and the switch of klog's logger (Apply), which the command
// makes once, before the server starts. It logs nothing itself, and imports no
// package of Concord.
package logs
