package quota

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
)

// TestGiveBackWaitsForASecondRecount: a recount that keeps every usage is written at
// once; one that gives usage back only once a recount givenBackRecount later gives it
// back too (a write admission charged may still be on its way to etcd), and a recount
// that keeps the usage meanwhile cancels it.
func TestGiveBackWaitsForASecondRecount(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Unix(1000, 0))
	u := &usage{clock: clk}
	q, other := types.NamespacedName{Namespace: "ns", Name: "q"}, types.NamespacedName{Namespace: "ns", Name: "other"}
	if !u.settled(q, true) {
		t.Fatal("a recount that keeps the usage waits")
	}
	if u.settled(q, false) {
		t.Fatal("a first give-back is written at once")
	}
	clk.SetTime(clk.Now().Add(givenBackRecount / 2))
	if u.settled(q, false) || u.settled(other, false) {
		t.Fatal("a give-back is written before givenBackRecount passed since the first")
	}
	clk.SetTime(clk.Now().Add(givenBackRecount / 2))
	if !u.settled(q, false) {
		t.Fatal("a give-back confirmed givenBackRecount later is not written")
	}
	if u.settled(q, false) {
		t.Fatal("a written give-back's wait was not forgotten")
	}
	if !u.settled(q, true) {
		t.Fatal("a recount that keeps the usage waits")
	}
	clk.SetTime(clk.Now().Add(givenBackRecount))
	if u.settled(q, false) {
		t.Fatal("a give-back after one that was cancelled is written at once")
	}
}
