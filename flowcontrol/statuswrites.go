package flowcontrol

import (
	"context"
	"sync"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	flowcontrolapply "k8s.io/client-go/applyconfigurations/flowcontrol/v1"
	flowcontrolclient "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
)

// statusWrites is the client the flowcontrol library writes FlowSchema status
// (the Dangling condition) through. The library's config worker is not joined when
// its Run returns: a write it has under way, and the others of the same pass, would
// reach a server that has stopped listening (and be logged as errors). statusWrites
// counts them, so that Controller.Run can wait for the worker to finish its pass.
type statusWrites struct {
	flowcontrolclient.FlowcontrolV1Interface

	mu       sync.Mutex
	inFlight int
	last     time.Time // when the last write ended
}

func (s *statusWrites) FlowSchemas() flowcontrolclient.FlowSchemaInterface {
	return &countedFlowSchemas{FlowSchemaInterface: s.FlowcontrolV1Interface.FlowSchemas(), writes: s}
}

type countedFlowSchemas struct {
	flowcontrolclient.FlowSchemaInterface
	writes *statusWrites
}

func (c *countedFlowSchemas) ApplyStatus(ctx context.Context, fs *flowcontrolapply.FlowSchemaApplyConfiguration, opts metav1.ApplyOptions) (*flowcontrolv1.FlowSchema, error) {
	c.writes.mu.Lock()
	c.writes.inFlight++
	c.writes.mu.Unlock()
	defer func() {
		c.writes.mu.Lock()
		c.writes.inFlight--
		c.writes.last = time.Now()
		c.writes.mu.Unlock()
	}()
	return c.FlowSchemaInterface.ApplyStatus(ctx, fs, opts)
}

// writesQuiet is how long no status write must have run for the worker's pass to be
// over: the worker issues the writes of a pass back to back.
const writesQuiet = 100 * time.Millisecond

// waitIdle waits until no status write has run for writesQuiet, or for at most limit
// (or until ctx is done). The library's worker gives no signal of its pass ending: its
// writes are watched.
func (s *statusWrites) waitIdle(ctx context.Context, limit time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	_ = wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.inFlight == 0 && time.Since(s.last) >= writesQuiet, nil
	})
}
