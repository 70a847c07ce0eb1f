package discoveryparity

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// Record is what a server's discovery lists: every group, every version of it (not
// only the preferred one), and every resource and subresource of each version, with
// the fields a client reads. It is written as JSON in a deterministic order: groups by
// name, versions in the server's order of priority, resources by name.
type Record struct {
	// Server says what was read, e.g. "kube-apiserver v1.37.2".
	Server string `json:"server"`
	// EmulationVersion is the version the server emulated (major.minor).
	EmulationVersion string  `json:"emulationVersion"`
	Groups           []Group `json:"groups"`
}

// Group is an API group ("" is the core group).
type Group struct {
	Name             string    `json:"name"`
	PreferredVersion string    `json:"preferredVersion"`
	Versions         []Version `json:"versions"`
}

// Version is a version of a group and what it serves.
type Version struct {
	Version   string     `json:"version"`
	Resources []Resource `json:"resources"`
}

// Resource is one entry of a group version's discovery document: a resource, or a
// subresource named "<resource>/<subresource>". Verbs, ShortNames and Categories are
// sorted; Group and Version are those of the kind where the server names them (as
// autoscaling/v1 Scale for deployments/scale).
type Resource struct {
	Name               string   `json:"name"`
	SingularName       string   `json:"singularName"`
	Namespaced         bool     `json:"namespaced"`
	Group              string   `json:"group,omitempty"`
	Version            string   `json:"version,omitempty"`
	Kind               string   `json:"kind"`
	Verbs              []string `json:"verbs"`
	ShortNames         []string `json:"shortNames,omitempty"`
	Categories         []string `json:"categories,omitempty"`
	StorageVersionHash string   `json:"storageVersionHash,omitempty"`
}

// Read reads the discovery of the server cfg reaches: client-go's
// ServerGroupsAndResources over the per-group-version documents (/api/v1,
// /apis/<group>/<version>), the ones that carry storageVersionHash, which the
// aggregated document does not. Server and EmulationVersion are the caller's to set.
// A group version that fails to load is an error.
func Read(cfg *rest.Config) (*Record, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	groups, lists, err := dc.WithLegacy().ServerGroupsAndResources()
	if err != nil {
		return nil, fmt.Errorf("reading discovery: %w", err)
	}
	byGV := map[string]*metav1.APIResourceList{}
	for _, l := range lists {
		byGV[l.GroupVersion] = l
	}
	rec := &Record{}
	for _, g := range groups {
		group := Group{Name: g.Name, PreferredVersion: g.PreferredVersion.Version}
		for _, v := range g.Versions {
			version := Version{Version: v.Version, Resources: []Resource{}}
			l, ok := byGV[v.GroupVersion]
			if !ok {
				return nil, fmt.Errorf("discovery lists group version %s but no document for it", v.GroupVersion)
			}
			for _, r := range l.APIResources {
				version.Resources = append(version.Resources, Resource{
					Name: r.Name, SingularName: r.SingularName, Namespaced: r.Namespaced,
					Group: r.Group, Version: r.Version, Kind: r.Kind,
					Verbs: sorted(r.Verbs), ShortNames: sorted(r.ShortNames), Categories: sorted(r.Categories),
					StorageVersionHash: r.StorageVersionHash,
				})
			}
			slices.SortFunc(version.Resources, func(a, b Resource) int { return strings.Compare(a.Name, b.Name) })
			group.Versions = append(group.Versions, version)
		}
		rec.Groups = append(rec.Groups, group)
	}
	slices.SortFunc(rec.Groups, func(a, b Group) int { return strings.Compare(a.Name, b.Name) })
	return rec, nil
}

func sorted(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}

// RecordingName is the file name of the recording of kube-apiserver release
// (major.minor.patch) emulating emulation (major.minor), in testdata.
func RecordingName(release, emulation string) string {
	return "kube-" + release + "-emulating-" + emulation + ".json"
}

// Write writes rec as indented JSON to path.
func Write(path string, rec *Record) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// Load reads a record written by Write.
func Load(path string) (*Record, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rec := &Record{}
	if err := json.Unmarshal(data, rec); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}
