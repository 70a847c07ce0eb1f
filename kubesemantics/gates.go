package kubesemantics

import (
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"

	// Registers kube-apiserver's feature gates, with their histories, in
	// utilfeature.DefaultMutableFeatureGate.
	_ "k8s.io/kubernetes/pkg/features"
)

// Gates are one server's Kubernetes feature gates: every gate kube-apiserver knows,
// resolved at the server's emulation and minimum compatibility versions. Kubernetes'
// packages take no gate as a parameter: they ask the process-wide
// utilfeature.DefaultFeatureGate. Gates.Do makes that gate this server's for the
// length of a call.
type Gates struct {
	gate featuregate.MutableVersionedFeatureGate
}

// NewGates returns kube's feature gates at emulation and minCompatibility. Where
// concord, the server's own gate, knows a gate kube knows too, kube's follows it.
func NewGates(emulation, minCompatibility *version.Version, concord featuregate.FeatureGate) (*Gates, error) {
	g := utilfeature.DefaultMutableFeatureGate.DeepCopyAndReset()
	if err := g.SetEmulationVersionAndMinCompatibilityVersion(emulation, minCompatibility); err != nil {
		return nil, fmt.Errorf("kube's feature gates at emulation version %s, minimum compatibility %s: %w", emulation, minCompatibility, err)
	}
	set := map[string]bool{}
	if concord != nil {
		known := g.GetAll()
		for f := range concord.DeepCopy().GetAll() {
			if _, ok := known[f]; ok && concord.Enabled(f) != g.Enabled(f) {
				set[string(f)] = concord.Enabled(f)
			}
		}
	}
	if err := g.SetFromMap(set); err != nil {
		return nil, fmt.Errorf("kube's feature gates: %w", err)
	}
	g.Close()
	return &Gates{gate: g}, nil
}

// FeatureGates returns every feature gate of kube-apiserver's code, with its history
// and dependencies, at its defaults: what --feature-gates may set besides Concord's
// own (compatibility.Options.KubeGates).
func FeatureGates() featuregate.FeatureGate { return utilfeature.DefaultMutableFeatureGate }

// Enabled reports whether kube's feature f is enabled for this server.
func (g *Gates) Enabled(f featuregate.Feature) bool { return g.gate.Enabled(f) }

// Do runs fn with this server's gates as the process's: Kubernetes' code fn calls
// reads them. Calls for one server's gates run concurrently; a call for another
// server's (only the in-process harness runs several in one process) waits until
// those in progress return, and calls waiting for another's gates hold new ones back,
// so that no server waits forever. Code outside Do that reads the process's gate (a
// library of k8s.io/apiserver) sees the gates of the server whose call came last.
func (g *Gates) Do(fn func()) {
	scope.enter(g)
	defer scope.leave()
	fn()
}

// scope is the process's one gate switch.
var scope = newSwitch()

// gateSwitch lets one Gates at a time be the process's gate.
type gateSwitch struct {
	mu      sync.Mutex
	changed *sync.Cond
	current *Gates
	active  int            // calls in progress under current
	waiting map[*Gates]int // calls waiting, by the gates they need
	waiters int            // the sum of waiting
}

func newSwitch() *gateSwitch {
	s := &gateSwitch{waiting: map[*Gates]int{}}
	s.changed = sync.NewCond(&s.mu)
	return s
}

// enter waits until g may be the process's gate, makes it so, and counts the call.
// g's calls join those in progress unless another server's are waiting; once none is
// in progress, another server's waiting calls go first.
func (s *gateSwitch) enter(g *Gates) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		others := s.waiters - s.waiting[g]
		if s.active == 0 && (s.current != g || others == 0) || s.active > 0 && s.current == g && others == 0 {
			break
		}
		s.waiting[g]++
		s.waiters++
		s.changed.Wait()
		s.waiting[g]--
		s.waiters--
		if s.waiting[g] == 0 {
			delete(s.waiting, g)
		}
	}
	if s.current != g {
		s.current = g
		processGate.current.Store(g)
	}
	s.active++
}

func (s *gateSwitch) leave() {
	s.mu.Lock()
	s.active--
	if s.active == 0 {
		s.changed.Broadcast()
	}
	s.mu.Unlock()
}

// processGate is installed as utilfeature.DefaultFeatureGate: it answers with the
// gates Do last installed, or, before any, with kube's defaults.
var processGate = func() *delegate {
	d := &delegate{fallback: utilfeature.DefaultFeatureGate}
	utilfeature.DefaultFeatureGate = d
	return d
}()

// delegate is a featuregate.FeatureGate that forwards to the current Gates. The
// pointer is swapped atomically, so that readers outside Do race with nothing.
type delegate struct {
	current  atomic.Pointer[Gates]
	fallback featuregate.FeatureGate
}

func (d *delegate) gate() featuregate.FeatureGate {
	if g := d.current.Load(); g != nil {
		return g.gate
	}
	return d.fallback
}

func (d *delegate) Enabled(key featuregate.Feature) bool { return d.gate().Enabled(key) }
func (d *delegate) KnownFeatures() []string              { return d.gate().KnownFeatures() }
func (d *delegate) Dependencies() map[featuregate.Feature][]featuregate.Feature {
	return d.gate().Dependencies()
}
func (d *delegate) DeepCopy() featuregate.MutableVersionedFeatureGate { return d.gate().DeepCopy() }
func (d *delegate) Validate() []error                                 { return d.gate().Validate() }
