package safety

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The operations the writers record, each on one object (its key, "configmaps/x" or
// "widgets/x"): the object is a register whose value is its data.v, "" while it does
// not exist.
type opKind int

const (
	opCreate opKind = iota
	opUpdate        // unconditional (a merge patch) or conditional on a resourceVersion that held
	opDelete
	opRead
)

func (k opKind) String() string {
	return [...]string{"create", "update", "delete", "read"}[k]
}

type opInput struct {
	key   string
	kind  opKind
	value string // written by create and update
}

// opOutput is how an operation ended.
type opOutput struct {
	// unknown: no answer (a timeout, a lost connection, a 5xx): it may or may not
	// have taken effect.
	unknown bool
	// refused: a definite refusal that says the object's state: create found it
	// (AlreadyExists), update or delete did not (NotFound).
	refused bool
	value   string // what a read saw ("" not found)
}

// outcome classifies the error of an operation.
func outcome(err error) (opOutput, bool) {
	switch {
	case err == nil:
		return opOutput{}, true
	case apierrors.IsNotFound(err) && !namesObject(err):
		// The resource, not the object, was not found: it says nothing of the object.
		return opOutput{unknown: true}, true
	case apierrors.IsAlreadyExists(err), apierrors.IsNotFound(err):
		return opOutput{refused: true}, true
	case apierrors.IsConflict(err), apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err):
		// Refused before anything was written, saying nothing of the object's state.
		return opOutput{}, false
	case isBarrierRefusal(err):
		return opOutput{}, false
	default:
		return opOutput{unknown: true}, true
	}
}

// namesObject reports whether a NotFound is about an object (its details name it), not
// about the resource.
func namesObject(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Details != nil && status.Status().Details.Name != ""
}

// isBarrierRefusal reports the storage-version barrier's 503: the write was refused
// before it reached storage.
func isBarrierRefusal(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && apierrors.IsServiceUnavailable(err) &&
		strings.Contains(status.Status().Message, "wait for storage version registration")
}

// registerModel is the sequential specification of one object.
var registerModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(opInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []interface{} { return []interface{}{""} },
	Step: func(state, input, output interface{}) []interface{} {
		s, in, out := state.(string), input.(opInput), output.(opOutput)
		exists := s != ""
		var next string
		switch in.kind {
		case opRead:
			if out.unknown || out.value == s {
				return []interface{}{s}
			}
			return nil
		case opCreate:
			if out.refused {
				return when(exists, s)
			}
			next = in.value
			if out.unknown {
				return appendWhen([]interface{}{s}, !exists, next)
			}
			return when(!exists, next)
		case opUpdate, opDelete:
			if out.refused {
				return when(!exists, s)
			}
			if in.kind == opUpdate {
				next = in.value
			}
			if out.unknown {
				return appendWhen([]interface{}{s}, exists, next)
			}
			return when(exists, next)
		}
		return nil
	},
	DescribeOperation: func(input, output interface{}) string {
		in, out := input.(opInput), output.(opOutput)
		switch {
		case out.unknown:
			return fmt.Sprintf("%s %s %q -> unknown", in.kind, in.key, in.value)
		case out.refused:
			return fmt.Sprintf("%s %s %q -> refused", in.kind, in.key, in.value)
		case in.kind == opRead:
			return fmt.Sprintf("read %s -> %q", in.key, out.value)
		}
		return fmt.Sprintf("%s %s %q -> ok", in.kind, in.key, in.value)
	},
}

func when(ok bool, s string) []interface{} {
	if ok {
		return []interface{}{s}
	}
	return nil
}

func appendWhen(states []interface{}, ok bool, s string) []interface{} {
	if ok {
		return append(states, s)
	}
	return states
}

// recorder keeps the operations of every writer.
type recorder struct {
	start time.Time

	mu                       sync.Mutex
	ops                      []porcupine.Operation
	acked, unknown, refusals int
}

func newRecorder() *recorder { return &recorder{start: time.Now()} }

func (r *recorder) now() int64 { return time.Since(r.start).Nanoseconds() }

// record runs f, an operation of client on in, and keeps it unless it was refused
// without saying anything of the object.
func (r *recorder) record(client int, in opInput, f func() (string, error)) error {
	call := r.now()
	value, err := f()
	ret := r.now()
	out, keep := outcome(err)
	out.value = value
	r.mu.Lock()
	defer r.mu.Unlock()
	if !keep {
		r.refusals++
		return err
	}
	switch {
	case out.unknown:
		r.unknown++
		ret = math.MaxInt64 // it may take effect at any time from its call on
	case !out.refused:
		r.acked++
	}
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	return err
}

// check runs porcupine over the history; it returns the keys whose history is not
// linearizable (and whether the check was cut short).
func (r *recorder) check(timeout time.Duration) (bad []string, result porcupine.CheckResult) {
	r.mu.Lock()
	ops := append([]porcupine.Operation(nil), r.ops...)
	r.mu.Unlock()
	model := registerModel.ToModel()
	result, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	if result != porcupine.Illegal {
		return nil, result
	}
	for _, part := range registerModel.Partition(ops) {
		if porcupine.CheckOperationsTimeout(model, part, timeout/4) == porcupine.Illegal {
			bad = append(bad, describeHistory(part))
		}
	}
	_ = info
	return bad, result
}

// describeHistory lists the operations of one object in call order, for a report.
func describeHistory(ops []porcupine.Operation) string {
	ops = append([]porcupine.Operation(nil), ops...)
	sort.Slice(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	var b strings.Builder
	b.WriteString(ops[0].Input.(opInput).key)
	for _, op := range ops {
		ret := "∞"
		if op.Return != math.MaxInt64 {
			ret = fmt.Sprintf("%.3f", float64(op.Return)/1e9)
		}
		fmt.Fprintf(&b, "\n    [%.3f, %s] client %d: %s", float64(op.Call)/1e9, ret, op.ClientId, registerModel.DescribeOperation(op.Input, op.Output))
	}
	return b.String()
}
