package etcd

import "errors"

// ErrInvalidConfig is wrapped by every error about a configuration value: a malformed
// URL, an unknown enumeration value, a TLS file that is missing or unreadable. The
// message names the flag and says what is allowed.
var ErrInvalidConfig = errors.New("invalid etcd configuration")

// ErrNotReady is wrapped when an embedded member did not become ready within its
// ready timeout, typically because too few members of a new cluster have started to
// form a quorum.
var ErrNotReady = errors.New("etcd member not ready")

// ErrStopped is wrapped when an embedded member stopped without being asked to, either
// while starting or later, as reported by [Embedded.Err].
var ErrStopped = errors.New("etcd member stopped unexpectedly")

// ErrUnreachable is wrapped by [NewClient] when no quorum of the configured cluster
// answered in time. The message names the endpoints that were tried.
var ErrUnreachable = errors.New("etcd unreachable")

// ErrOtherCluster is wrapped when an endpoint answers as a member of another cluster
// than the one the client first reached there; the client does not connect to it.
var ErrOtherCluster = errors.New("etcd member of another cluster")
