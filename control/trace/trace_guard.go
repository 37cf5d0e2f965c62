package trace

import (
	"errors"
	"fmt"
	"weak"

	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Guards and unrolled traces. Some computations cannot be traced as
// frames: a loop's gradient differentiated again (a second derivative, a
// Hessian-vector product), whose backward frame no tape can see into, or a
// loop that runs eagerly inside a traced region. These are traced
// unrolled, iteration by iteration, and every decision the trace took on a
// value that varies between calls (a loop's predicate at each iteration) is
// kept in the graph as a guard: an op that checks, at each run, that the
// decision goes the same way. A run whose guard fails is abandoned and the
// Function runs fn eagerly for that call, so the result is always what fn
// computes.

// ErrGuardFailed is the Kind of the error a guard raises when a decision
// goes another way than at the trace.
var ErrGuardFailed = errors.New("trace: a traced decision went another way")

// errUnroll fails a trace that read a value only the eager run computed
// (a loop's gradient computed beside its traced backward frame, read again
// by a tape): the Function traces again with loops unrolled.
var errUnroll = errors.New("trace: the trace read a value computed outside it")

// guardAttrs is a guard's expected decision and the construct that made it.
type guardAttrs struct {
	Want      bool
	Construct string
}

func (a guardAttrs) String() string { return fmt.Sprintf("%s decided %v", a.Construct, a.Want) }

var guardOp = func() *eager.Op {
	op := eager.Register(&eager.Op{
		Name: "Guard", Inputs: 1, DTypes: []tensor.DType{tensor.Bool}, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out {
			if c.Inputs[0].Rank() != 0 {
				c.Fail(tensor.ErrRank, "guards a bool scalar, got %v", c.Inputs[0].Shape())
			}
			return c.Out1(tensor.Bool, nil)
		},
	})
	// Portable: it reads the decision through the host and copies it to
	// the output on the input's device, so a trace on any device guards.
	eager.RegisterPortable(op.Name, tensor.Bool, func(c *eager.Call, outs []*tensor.Tensor) {
		a, got := c.Attrs.(guardAttrs), tensor.ToSlice[bool](c.Inputs[0])[0]
		if got != a.Want {
			c.Fail(ErrGuardFailed, "%s decided %v at the trace and %v now", a.Construct, a.Want, got)
		}
		if err := c.Device.Copy(outs[0].Buffer(), 0, nil, c.Inputs[0].Buffer(), 0, nil, nil, 1); err != nil {
			c.Fail(tensor.ErrDeviceFailed, "%v", err)
		}
	})
	return op
}()

func init() {
	plumb.GuardValue = func(construct string, x any) {
		v := x.(*tensor.Tensor)
		t := traceOf(v)
		if t == nil || !t.Recording() || !t.Derived(v) {
			return
		}
		now := tensor.FullOn(v.Device(), v.DType(), v.Float())
		t.Guard(construct, ops.Eq(v, now))
	}
}

// guard records that construct decided p (a bool scalar whose value varies
// between calls) as it did now.
func (t *tracer) Guard(construct string, p *tensor.Tensor) {
	n := t.apply(guardOp, guardAttrs{Want: p.Item().(bool), Construct: construct}, []*tensor.Tensor{p},
		[]eager.Out{{DType: tensor.Bool, Shape: tensor.Shape{}}})
	n.Keep = true // nothing reads it; pruning keeps it
	t.hasGuards = true
}

// noteUntraced remembers outs, made while the trace was paused, so that
// reading one later in the recording is caught (weakly: the eager run's
// values are not kept alive by it).
func (t *tracer) noteUntraced(outs []*tensor.Tensor) {
	if t.untraced == nil {
		t.untraced = map[weak.Pointer[tensor.Tensor]]bool{}
	}
	for _, o := range outs {
		t.untraced[weak.Make(o)] = true
		t.markValue(o) // ops reading it reach the trace
	}
}

// readsUntraced reports whether x was made while the trace was paused.
func (t *tracer) readsUntraced(x *tensor.Tensor) bool {
	return t.untraced != nil && t.untraced[weak.Make(x)]
}

// runGuarded runs tr on args (replayed reports a recording's replay,
// which ran the Function's tail too); when a guard fails it runs fn eagerly
// instead (logging that once), so the call returns what fn computes.
func (f *Function) runGuarded(tr *traced, args []*tensor.Tensor, wantOwned bool) (out []*tensor.Tensor, owned []bool, replayed bool, err error) {
	if !tr.hasGuards {
		if f.Partitions != nil {
			out, err := f.runPartitioned(tr, args)
			return out, make([]bool, len(out)), false, err
		}
		if f.Record {
			if out, owned, ok, err := tr.replay(args, f.Tail, wantOwned, f.Logf); ok {
				return out, owned, true, err
			}
		}
		out, owned, err := tr.run(args, graph.ExecOptions{SwapStacks: f.SwapStacks}, wantOwned)
		return out, owned, false, err
	}
	if f.Partitions != nil {
		// A graph with guards was traced whole, its ops placed on the
		// devices of every partition with no transfers between them: fn
		// runs instead, as where a guard fails.
		out = f.fn(args)
		return out, make([]bool, len(out)), false, nil
	}
	failed := false
	func() {
		defer func() {
			if r := recover(); r != nil {
				var te *tensor.Error
				if e, ok := r.(error); ok && errors.As(e, &te) && te.Kind == ErrGuardFailed {
					failed = true
					return
				}
				panic(r)
			}
		}()
		out, owned, err = tr.run(args, graph.ExecOptions{SwapStacks: f.SwapStacks}, wantOwned)
	}()
	if !failed {
		return out, owned, false, err
	}
	f.mu.Lock()
	note := !f.guardNoted && f.Logf != nil
	f.guardNoted = true
	logf := f.Logf
	f.mu.Unlock()
	if note {
		logf("trace: a traced Function's graph was traced unrolled and this call's loop took another number of iterations; it runs eagerly when that happens")
	}
	out = f.fn(args)
	return out, make([]bool, len(out)), false, nil
}
