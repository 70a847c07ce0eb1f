package wire

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// StorageVersionHash returns the hash discovery publishes for objects of kind stored
// in group/version: the first 8 bytes of the SHA-256 of "group/version/kind", base64
// (Kubernetes' definition). Only equality of hashes means anything: a change means
// objects may need migration.
func StorageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// StorageVersionName returns the name of the internal.apiserver.k8s.io StorageVersion
// object of gr: "<group>.<resource>", the legacy core group written "core"
// (core.configmaps, apps.deployments).
func StorageVersionName(gr schema.GroupResource) string {
	g := gr.Group
	if g == "" {
		g = coreGroup
	}
	return g + "." + gr.Resource
}

// ParseStorageVersionName is the inverse of StorageVersionName; ok is false for a name
// not of that form.
func ParseStorageVersionName(name string) (gr schema.GroupResource, ok bool) {
	i := strings.LastIndex(name, ".")
	if i <= 0 || i == len(name)-1 {
		return schema.GroupResource{}, false
	}
	gr = schema.GroupResource{Group: name[:i], Resource: name[i+1:]}
	if gr.Group == coreGroup {
		gr.Group = ""
	}
	return gr, true
}
