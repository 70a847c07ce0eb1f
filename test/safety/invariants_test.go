package safety

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/concordproject/concord/wire"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// exempt are the resources written without a StorageVersion entry by design (the
// barrier's exemptions): StorageVersions themselves, leases, the server's namespaces.
var exempt = map[schema.GroupResource]bool{
	{Group: "internal.apiserver.k8s.io", Resource: "storageversions"}: true,
	{Group: "coordination.k8s.io", Resource: "leases"}:                true,
	{Resource: "namespaces"}:                                          true,
	{Resource: "events"}:                                              true,
	{Group: "events.k8s.io", Resource: "events"}:                      true,
}

// svStatus is what the checker needs of a StorageVersion.
type svStatus struct {
	StorageVersions []struct {
		APIServerID       string   `json:"apiServerID"`
		EncodingVersion   string   `json:"encodingVersion"`
		DecodableVersions []string `json:"decodableVersions"`
	} `json:"storageVersions"`
	CommonEncodingVersion *string `json:"commonEncodingVersion"`
}

// checker follows every write to etcd, in revision order, and checks the invariants
// that hold at every moment.
type checker struct {
	live func(id string) bool
	// kube: the servers are kube-apiservers, which store built-ins in protobuf and
	// publish no StorageVersions here; the checks that need those are not made.
	kube bool
	// fields holds every stored PodTemplate to the write it names.
	fields *fieldLedger

	mu       sync.Mutex
	svs      map[string]svStatus // StorageVersion name → status
	objects  map[string]string   // object key → encoded apiVersion
	resource map[string]string   // object key → StorageVersion name
	// stored counts the objects of each resource (StorageVersion name) by the version
	// they are stored in.
	stored    map[string]map[string]int
	succeeded map[string]bool // migrations seen Succeeded
	// runningWhileDisagreeing are the migrations seen Running while the servers
	// disagreed (a page under way when a server changed its entry).
	runningWhileDisagreeing map[string]bool
	anomalies               []string
	events                  int
	// rev is the revision up to which the checker has seen every write.
	rev int64
}

// startChecker reads every key at the current revision, then watches from there until
// the test ends.
func (f *fleet) startChecker(t *testing.T) *checker {
	c := &checker{live: f.isLive, kube: f.kube, fields: f.fields, svs: map[string]svStatus{}, objects: map[string]string{},
		resource: map[string]string{}, stored: map[string]map[string]int{}, succeeded: map[string]bool{}, runningWhileDisagreeing: map[string]bool{}}
	resp, err := f.etcd.Get(t.Context(), "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	// What is there already was written before the checker looked: it is recorded,
	// and checked for decodability, but the order of its writes is lost.
	for _, kv := range resp.Kvs {
		c.put(string(kv.Key), kv.Value, kv.ModRevision, true)
	}
	c.seen(resp.Header.Revision)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := f.etcd.Watch(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
		for r := range w {
			if r.IsProgressNotify() {
				c.seen(r.Header.Revision) // every write up to it was sent
				continue
			}
			for _, ev := range r.Events {
				if ev.Type == clientv3.EventTypeDelete {
					c.delete(string(ev.Kv.Key))
					continue
				}
				c.put(string(ev.Kv.Key), ev.Kv.Value, ev.Kv.ModRevision, false)
			}
			if n := len(r.Events); n > 0 {
				c.seen(r.Events[n-1].Kv.ModRevision) // a revision's events come in one response
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return c
}

// seen records that every write up to rev has been checked.
func (c *checker) seen(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rev = max(c.rev, rev)
}

// seenUpTo is the revision up to which the checker has seen every write.
func (c *checker) seenUpTo() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rev
}

// groupResource returns the resource of a key: /registry/<group>/<resource>/...,
// "core" for the core group.
func groupResource(key string) schema.GroupResource {
	parts := strings.SplitN(strings.TrimPrefix(key, "/registry/"), "/", 3)
	if len(parts) < 2 {
		return schema.GroupResource{Resource: parts[0]}
	}
	if parts[0] == "core" {
		return schema.GroupResource{Resource: parts[1]}
	}
	return schema.GroupResource{Group: parts[0], Resource: parts[1]}
}

func (c *checker) anomaly(format string, args ...interface{}) {
	c.anomalies = append(c.anomalies, fmt.Sprintf(format, args...))
}

func (c *checker) put(key string, value []byte, rev int64, initial bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events++
	if strings.HasPrefix(key, "/registry/concord/") {
		return // Concord's own keys (credentials), not objects
	}
	if c.fields != nil && strings.HasPrefix(key, c.fields.prefix) {
		c.fields.check(key, value, rev)
	}
	if c.kube {
		if _, err := storedObject(value); err != nil {
			c.anomaly("rev %d: %s cannot be decoded: %v", rev, key, err)
		}
		return
	}
	gr := groupResource(key)
	switch gr {
	case schema.GroupResource{Group: "internal.apiserver.k8s.io", Resource: "storageversions"}:
		c.storageVersion(key, value, rev)
		return
	case schema.GroupResource{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations"}:
		c.migration(key, value, rev)
	}
	if exempt[gr] {
		return
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
	}
	if err := json.Unmarshal(value, &head); err != nil {
		c.anomaly("rev %d: %s is not JSON: %v", rev, key, err)
		return
	}
	name := wire.StorageVersionName(gr)
	c.forget(key)
	c.objects[key], c.resource[key] = head.APIVersion, name
	if c.stored[name] == nil {
		c.stored[name] = map[string]int{}
	}
	c.stored[name][head.APIVersion]++
	if !initial {
		c.checkWrite(key, name, head.APIVersion, rev)
	}
}

// checkWrite: an object written in version v of resource name must be in a version a
// live server had registered as its encoding version, and decodable by every live
// server that reports the resource.
func (c *checker) checkWrite(key, name, v string, rev int64) {
	sv, ok := c.svs[name]
	if !ok {
		c.anomaly("rev %d: %s written in %s before any server registered %s", rev, key, v, name)
		return
	}
	registered := false
	for _, e := range sv.StorageVersions {
		if !c.live(e.APIServerID) {
			continue
		}
		registered = registered || e.EncodingVersion == v
		if !slices.Contains(e.DecodableVersions, v) {
			c.anomaly("rev %d: %s written in %s, which live server %s cannot decode (%v)", rev, key, v, e.APIServerID, e.DecodableVersions)
		}
	}
	if !registered && c.anyLive(sv) {
		c.anomaly("rev %d: %s written in %s, which no live server registered for %s", rev, key, v, name)
	}
}

func (c *checker) anyLive(sv svStatus) bool {
	for _, e := range sv.StorageVersions {
		if c.live(e.APIServerID) {
			return true
		}
	}
	return false
}

// storageVersion records a StorageVersion and checks that every live server reporting
// the resource decodes every object stored.
func (c *checker) storageVersion(key string, value []byte, rev int64) {
	var obj struct {
		Status svStatus `json:"status"`
	}
	if err := json.Unmarshal(value, &obj); err != nil {
		c.anomaly("rev %d: StorageVersion %s is not JSON: %v", rev, key, err)
		return
	}
	name := key[strings.LastIndex(key, "/")+1:]
	c.svs[name] = obj.Status
	for k, n := range c.resource {
		if n != name {
			continue
		}
		for _, e := range obj.Status.StorageVersions {
			if c.live(e.APIServerID) && !slices.Contains(e.DecodableVersions, c.objects[k]) {
				c.anomaly("rev %d: live server %s reports %s decoding %v, but %s is stored in %s", rev, e.APIServerID, name, e.DecodableVersions, k, c.objects[k])
			}
		}
	}
}

// migration checks that a migration runs only while the servers agree, and that one
// that succeeded left nothing in another encoding.
func (c *checker) migration(key string, value []byte, rev int64) {
	var m struct {
		Spec struct {
			Resource struct{ Group, Resource string } `json:"resource"`
		} `json:"spec"`
		Status struct {
			Conditions []struct{ Type, Status string } `json:"conditions"`
		} `json:"status"`
	}
	if err := json.Unmarshal(value, &m); err != nil {
		c.anomaly("rev %d: migration %s is not JSON: %v", rev, key, err)
		return
	}
	name := wire.StorageVersionName(schema.GroupResource{Group: m.Spec.Resource.Group, Resource: m.Spec.Resource.Resource})
	sv, known := c.svs[name]
	for _, cond := range m.Status.Conditions {
		if cond.Status != "True" {
			continue
		}
		switch {
		case cond.Type == "Running" && known && sv.CommonEncodingVersion == nil:
			// The trigger starts a migration on agreement and aborts it on
			// disagreement, but the two objects are written apart: a page under way
			// when a server changes its entry still lands. Counted and reported; the
			// migration's success then does not count (the trigger compares the
			// StorageVersion's resourceVersion), which the quiescence checks verify.
			c.runningWhileDisagreeing[key] = true
		case cond.Type == "Succeeded" && !c.succeeded[key]:
			c.succeeded[key] = true
			if known && sv.CommonEncodingVersion != nil && !c.runningWhileDisagreeing[key] {
				for k, n := range c.resource {
					if n == name && c.objects[k] != *sv.CommonEncodingVersion {
						c.anomaly("rev %d: migration %s succeeded, but %s is still in %s (common %s)", rev, key, k, c.objects[k], *sv.CommonEncodingVersion)
					}
				}
			}
		}
	}
}

func (c *checker) delete(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events++
	c.forget(key)
}

// forget takes key's object out of the checker's state. Called with c.mu held.
func (c *checker) forget(key string) {
	if name, ok := c.resource[key]; ok {
		c.stored[name][c.objects[key]]--
	}
	delete(c.objects, key)
	delete(c.resource, key)
}

// encodings counts the objects of resource name (a StorageVersion's name) stored in
// version v, as far as the checker has seen.
func (c *checker) encodings(name, v string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stored[name][v]
}

// results returns the anomalies found so far, the events seen and the migrations
// seen Running while the servers disagreed.
func (c *checker) results() ([]string, int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.anomalies), c.events, len(c.runningWhileDisagreeing)
}
