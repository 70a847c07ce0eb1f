// Package compatibility decides, from the API catalog and a server's binary, emulation
// and minimum compatibility versions (KEP-4330), which built-in APIs a server serves
// and which version it stores each resource in.
//
// The storage rule is the KEP's: a resource is stored in the newest version
// (Kubernetes-aware order) that every release in [minCompatibility, emulation+1]
// supports, so that a rollback to any release down to minCompatibility, and the next
// release up, can read what this server writes. Releases in that window that do not
// know the resource at all do not constrain it (they cannot serve it whatever the
// encoding). No qualifying version is an error naming the resource, never a silent
// fallback.
//
// The package decides; it does not serve. It must not import server or storage.
package compatibility
