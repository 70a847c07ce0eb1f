package catalog

import (
	_ "embed"
	"encoding/json"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KubeVerbs is what kube-apiserver's discovery says each of its resources serves: the
// verbs of the resource and of each of its subresources. It is recorded from a real
// kube-apiserver (verbs.json; `go test ./catalog -run TestKubeVerbs -args -rewrite`
// records it again from a peer built by test/kubepeer/build.sh), with every API
// group-version enabled, and checked to be the same at the oldest emulation version
// that release offers: a resource's verbs do not change from release to release.
type KubeVerbs struct {
	// Release is the kube-apiserver release recorded.
	Release string `json:"release"`
	// Resources are keyed by group-resource ("deployments.apps", "pods").
	Resources map[string]ResourceVerbs `json:"resources"`
}

// ResourceVerbs are the verbs of one resource and of its subresources, sorted.
type ResourceVerbs struct {
	Verbs        []string            `json:"verbs"`
	Subresources map[string][]string `json:"subresources,omitempty"`
}

//go:embed verbs.json
var verbsJSON []byte

var parseVerbs = sync.OnceValues(func() (*KubeVerbs, error) {
	v := &KubeVerbs{}
	return v, json.Unmarshal(verbsJSON, v)
})

// RecordedVerbs returns the recording embedded in the binary.
func RecordedVerbs() (*KubeVerbs, error) { return parseVerbs() }

// Of returns the verbs of gr, and false if kube-apiserver does not serve it.
func (k *KubeVerbs) Of(gr schema.GroupResource) (ResourceVerbs, bool) {
	v, ok := k.Resources[gr.String()]
	return v, ok
}

// Serves reports whether the resource (subresource "") or the subresource serves verb.
func (v ResourceVerbs) Serves(subresource, verb string) bool {
	if subresource == "" {
		return slices.Contains(v.Verbs, verb)
	}
	return slices.Contains(v.Subresources[subresource], verb)
}
