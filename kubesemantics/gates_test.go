package kubesemantics

import (
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/features"
)

// TestGatesDo runs calls for two servers' gates (HPAScaleToZero is off at 1.36, on at
// 1.37) from many goroutines at once: every call must see its own server's gates
// through the process's gate, from its first read to its last.
func TestGatesDo(t *testing.T) {
	old, err := NewGates(version.MustParse("1.36"), version.MustParse("1.35"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := NewGates(version.MustParse("1.37"), version.MustParse("1.36"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if old.Enabled(features.HPAScaleToZero) || !cur.Enabled(features.HPAScaleToZero) {
		t.Fatalf("HPAScaleToZero: %v at 1.36, %v at 1.37; want off, on", old.Enabled(features.HPAScaleToZero), cur.Enabled(features.HPAScaleToZero))
	}
	var wrong, calls atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		g, want := old, false
		if i%2 == 1 {
			g, want = cur, true
		}
		wg.Go(func() {
			for range 200 {
				g.Do(func() {
					calls.Add(1)
					for range 20 {
						if utilfeature.DefaultFeatureGate.Enabled(features.HPAScaleToZero) != want {
							wrong.Add(1)
						}
					}
				})
			}
		})
	}
	// Readers outside Do race with nothing (the race detector checks it).
	wg.Go(func() {
		for range 2000 {
			utilfeature.DefaultFeatureGate.Enabled(features.HPAScaleToZero)
		}
	})
	wg.Wait()
	if calls.Load() != 16*200 || wrong.Load() != 0 {
		t.Fatalf("%d calls, %d reads saw another server's gates", calls.Load(), wrong.Load())
	}
}

// TestNewGatesFollowsConcord: a gate Concord's own configuration sets is set in
// kube's gates too.
func TestNewGatesFollowsConcord(t *testing.T) {
	concord := utilfeature.DefaultMutableFeatureGate.DeepCopyAndReset()
	if err := concord.SetFromMap(map[string]bool{string(features.HPAScaleToZero): true}); err != nil {
		t.Fatal(err)
	}
	g, err := NewGates(version.MustParse("1.36"), version.MustParse("1.35"), concord)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Enabled(features.HPAScaleToZero) {
		t.Fatal("HPAScaleToZero set on by the server's gate is off in kube's")
	}
}
