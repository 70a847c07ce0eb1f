package wire

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RewritePath is the prefix of the storage-migration fast path:
//
//	POST /concord/v1/rewrite/<group>/<resource>?limit=N&continue=TOKEN
//
// (<group> is "core" for the legacy group). Each call re-encodes one page of the
// resource's objects in the current storage version on the server and answers with a
// RewriteResult as JSON. It is a write of the resource (verb "rewrite"): it passes the
// whole handler chain, the storage version barrier included.
const RewritePath = "/concord/v1/rewrite/"

// RewriteStorageVersionParam is the query parameter that holds a rewrite call's
// writes to a StorageVersion. Its value is the resourceVersion of the resource's
// StorageVersion object (internal.apiserver.k8s.io, named
// StorageVersionName) that the caller started its migration from. The server then
// makes the page's writes in etcd transactions that also require that object to be
// still at that resourceVersion: once a server has written a change of its entry (a
// server of another release joined, or one changed its storage version), no object is
// rewritten any more, and the result says so (RewriteResult.StorageVersionChanged). A
// server that holds the writes to it echoes it in
// RewriteResult.StorageVersionResourceVersion; one that predates it ignores it.
const RewriteStorageVersionParam = "storageVersionResourceVersion"

// RewriteVerb is the verb a rewrite request has in request info and authorization.
const RewriteVerb = "rewrite"

// coreGroup is how the legacy core group is written in paths and names.
const coreGroup = "core"

// RewriteURL returns the path that rewrites gr.
func RewriteURL(gr schema.GroupResource) string {
	g := gr.Group
	if g == "" {
		g = coreGroup
	}
	return RewritePath + g + "/" + gr.Resource
}

// ParseRewritePath returns the resource a path below RewritePath names; ok is false
// for any other path.
func ParseRewritePath(path string) (gr schema.GroupResource, ok bool) {
	rest, found := strings.CutPrefix(path, RewritePath)
	if !found {
		return schema.GroupResource{}, false
	}
	group, resource, found := strings.Cut(rest, "/")
	if !found || group == "" || resource == "" || strings.Contains(resource, "/") {
		return schema.GroupResource{}, false
	}
	if group == coreGroup {
		group = ""
	}
	return schema.GroupResource{Group: group, Resource: resource}, true
}

// RewriteResult reports one page of a rewrite.
type RewriteResult struct {
	// Scanned counts the objects read.
	Scanned int `json:"scanned"`
	// Rewritten counts the objects written again in the storage version: their
	// resourceVersion moved.
	Rewritten int `json:"rewritten"`
	// Skipped counts objects already encoded in the storage version, or changed or
	// deleted by someone else since they were read (a change re-encodes them anyway).
	Skipped int `json:"skipped"`
	// Failed lists the objects that cannot be rewritten and why (undecodable,
	// unconvertible, no longer valid).
	Failed []RewriteFailure `json:"failed,omitempty"`
	// Continue resumes the rewrite after this page; empty when the resource is done,
	// or when StorageVersionChanged ended it.
	Continue string `json:"continue,omitempty"`
	// Remaining counts the objects after this page, as the page was read, when the
	// server knows it cheaply (nil otherwise): with Scanned, a first page's total.
	Remaining *int64 `json:"remaining,omitempty"`
	// ResourceVersion is the revision the page was read at (empty if the server does
	// not say): objects written after it are in the storage version already.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// StorageVersionResourceVersion is the RewriteStorageVersionParam the page's
	// writes were held to (empty if the call carried none, or the server ignores it).
	StorageVersionResourceVersion string `json:"storageVersionResourceVersion,omitempty"`
	// StorageVersionChanged reports that the resource's StorageVersion object was no
	// longer at StorageVersionResourceVersion when the page was written: the writes
	// from then on were not made (counted neither as rewritten nor as skipped), and
	// the rewrite under that StorageVersion is over.
	StorageVersionChanged bool `json:"storageVersionChanged,omitempty"`
}

// RewriteFailure is one object a rewrite could not rewrite.
type RewriteFailure struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Reason    string `json:"reason"`
}
