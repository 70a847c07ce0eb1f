package storageversion

import (
	"slices"

	"github.com/concordproject/concord/registry"
	"github.com/concordproject/concord/wire"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
)

// Entry is one server's report about one resource.
type Entry = apiserverinternalv1alpha1.ServerStorageVersion

// EntryFor returns what server id reports about res: the storage version as encoding
// version, every version it knows as decodable, the served ones as served, each as an
// apiVersion ("v1", "apps/v1") and newest first.
func EntryFor(id string, res *registry.Resource) Entry {
	gvs := func(vs []string) []string {
		out := make([]string, len(vs))
		for i, v := range vs {
			out[i] = res.GroupVersion(v).String()
		}
		return out
	}
	return Entry{
		APIServerID:       id,
		EncodingVersion:   res.GroupVersion(res.StorageVersion).String(),
		DecodableVersions: gvs(res.DecodableVersions()),
		ServedVersions:    gvs(res.ServedVersions()),
	}
}

// sameEntry reports whether two entries say the same.
func sameEntry(a, b *Entry) bool {
	return a.APIServerID == b.APIServerID && a.EncodingVersion == b.EncodingVersion &&
		slices.Equal(a.DecodableVersions, b.DecodableVersions) && slices.Equal(a.ServedVersions, b.ServedVersions)
}

// findEntry returns the entry of id in st, or nil.
func findEntry(st *apiserverinternalv1alpha1.StorageVersionStatus, id string) *Entry {
	for i := range st.StorageVersions {
		if st.StorageVersions[i].APIServerID == id {
			return &st.StorageVersions[i]
		}
	}
	return nil
}

// encryptionKeys returns the keys reported in sv (none if the annotation cannot be
// read: the servers then write it again).
func encryptionKeys(sv *apiserverinternalv1alpha1.StorageVersion) map[string]wire.EncryptionKeys {
	keys, err := wire.ParseEncryptionKeys(sv.Annotations[wire.AnnotationEncryptionKeys])
	if err != nil {
		return map[string]wire.EncryptionKeys{}
	}
	return keys
}

// withKeys returns keys with id's member set to k: none for a server that writes and
// reads plaintext only.
func withKeys(keys map[string]wire.EncryptionKeys, id string, k wire.EncryptionKeys) map[string]wire.EncryptionKeys {
	if isPlaintext(k) {
		delete(keys, id)
	} else {
		keys[id] = k
	}
	return keys
}

// sameKeys reports whether id's member of keys says k.
func sameKeys(keys map[string]wire.EncryptionKeys, id string, k wire.EncryptionKeys) bool {
	got, ok := keys[id]
	if !ok {
		return isPlaintext(k)
	}
	return got.Write == k.Write && slices.Equal(got.Read, k.Read)
}

func isPlaintext(k wire.EncryptionKeys) bool {
	return (k.Write == "" || k.Write == wire.Plaintext) && (len(k.Read) == 0 || slices.Equal(k.Read, []string{wire.Plaintext}))
}

// withEntry returns the entries of st with e in place of the entry of the same server,
// or appended when that server has none.
func withEntry(st *apiserverinternalv1alpha1.StorageVersionStatus, e Entry) []Entry {
	out := slices.Clone(st.StorageVersions)
	for i := range out {
		if out[i].APIServerID == e.APIServerID {
			out[i] = e
			return out
		}
	}
	return append(out, e)
}

// without returns the entries of st except those drop selects.
func without(st *apiserverinternalv1alpha1.StorageVersionStatus, drop func(id string) bool) []Entry {
	var out []Entry
	for _, e := range st.StorageVersions {
		if !drop(e.APIServerID) {
			out = append(out, e)
		}
	}
	return out
}
