package registry

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/concordproject/concord/objectjson"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ErrNotDecodable means that a stored object is in a version this server cannot decode (written
// by a newer release, or by a CRD version since removed).
var ErrNotDecodable = errors.New("stored object is in a version this server cannot decode")

// ErrCorrupt means that a stored value is not a JSON object with apiVersion and kind.
var ErrCorrupt = errors.New("stored object is not valid JSON")

// Encode converts obj (in any decodable version) to the storage version and returns the
// bytes to store: JSON with the storage version's apiVersion and kind, without
// resourceVersion. obj itself is not changed. The encoding is deterministic (object
// keys sorted), so equal objects encode to equal bytes.
func (r *Resource) Encode(ctx context.Context, obj *unstructured.Unstructured) ([]byte, error) {
	out := obj
	switch {
	case obj.GetAPIVersion() != r.storedAPIVersion() || obj.GetKind() != r.storedKind():
		out = obj.DeepCopy()
		if err := r.toStored(ctx, out); err != nil {
			return nil, err
		}
		unstructured.RemoveNestedField(out.Object, "metadata", "resourceVersion")
		out.SetKind(r.storedKind())
	case obj.GetResourceVersion() != "":
		out = withoutResourceVersion(obj)
	}
	return objectjson.Marshal(out.Object)
}

// withoutResourceVersion returns obj without metadata.resourceVersion, sharing all
// else with obj (only the top and metadata maps are copied): for encoding, read only.
func withoutResourceVersion(obj *unstructured.Unstructured) *unstructured.Unstructured {
	top := maps.Clone(obj.Object)
	if meta, ok := top["metadata"].(map[string]any); ok {
		meta = maps.Clone(meta)
		delete(meta, "resourceVersion")
		top["metadata"] = meta
	}
	return &unstructured.Unstructured{Object: top}
}

// Decode parses a stored value written at revision rev. The object keeps the version
// it was stored in, and gets resourceVersion = rev. A version this server cannot decode
// is ErrNotDecodable, with a message naming the stored and the decodable versions.
func (r *Resource) Decode(data []byte, rev int64) (*unstructured.Unstructured, error) {
	m, err := objectjson.UnmarshalObject(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	obj := &unstructured.Unstructured{Object: m}
	if obj.Object == nil {
		return nil, fmt.Errorf("%w: not an object", ErrCorrupt)
	}
	apiVersion := obj.GetAPIVersion()
	v, err := r.versionOf(apiVersion)
	if (err != nil || r.Version(v) == nil) && (r.Shared == nil || apiVersion != r.storedAPIVersion()) {
		return nil, fmt.Errorf("%w: %s %q is stored as %q; this server decodes %s",
			ErrNotDecodable, r.GroupResource(), obj.GetName(), apiVersion, strings.Join(r.decodableAPIVersions(), ", "))
	}
	if rev > 0 {
		obj.SetResourceVersion(strconv.FormatInt(rev, 10))
	}
	return obj, nil
}

func (r *Resource) decodableAPIVersions() []string {
	vs := r.DecodableVersions()
	for i, v := range vs {
		vs[i] = r.APIVersion(v)
	}
	return vs
}
