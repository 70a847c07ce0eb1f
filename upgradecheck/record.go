package upgradecheck

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/concordproject/concord/versionskew"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ClusterRecord is what the command reads of a cluster, in a form that can be kept as
// a file: test/kubepeer records kube-apiserver clusters with it, so that the checks of
// a real Kubernetes cluster run in the ordinary suite without one (TestRecordedClusters).
// Resources are keyed as "<resource>.<group>" (schema.GroupResource's String).
type ClusterRecord struct {
	ServerVersion   string                   `json:"serverVersion"`
	States          map[string]State         `json:"states"`
	StorageVersions map[string]Encodings     `json:"storageVersions,omitempty"`
	CRDs            map[string]CRD           `json:"crds,omitempty"`
	Discovered      map[string]Discovered    `json:"discovered"`
	Skew            *versionskew.VersionSkew `json:"skew,omitempty"`
}

// NewClusterRecord records what was read.
func NewClusterRecord(obs *Observed, discovered map[schema.GroupResource]Discovered, serverVersion string) *ClusterRecord {
	r := &ClusterRecord{ServerVersion: serverVersion, States: keyed(obs.States), StorageVersions: keyed(obs.StorageVersions),
		CRDs: keyed(obs.CRDs), Discovered: keyed(discovered), Skew: obs.Skew}
	return r
}

// LoadClusterRecord reads a record written as JSON.
func LoadClusterRecord(path string) (*ClusterRecord, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &ClusterRecord{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Observed returns what the record holds as Read and discovery return it.
func (r *ClusterRecord) Observed() (*Observed, map[schema.GroupResource]Discovered) {
	return &Observed{States: unkeyed(r.States), StorageVersions: unkeyed(r.StorageVersions), CRDs: unkeyed(r.CRDs),
		Migrations: map[schema.GroupResource]Migration{}, Skew: r.Skew}, unkeyed(r.Discovered)
}

func keyed[V any](in map[schema.GroupResource]V) map[string]V {
	out := make(map[string]V, len(in))
	for gr, v := range in {
		out[gr.String()] = v
	}
	return out
}

func unkeyed[V any](in map[string]V) map[schema.GroupResource]V {
	out := make(map[schema.GroupResource]V, len(in))
	for k, v := range in {
		out[schema.ParseGroupResource(k)] = v
	}
	return out
}
