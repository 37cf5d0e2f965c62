package trace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/internal/flow"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/callsite"
	"github.com/eagerflow/eagerflow/internal/goid"
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

// guardAttrs is a guard's expected decision and the construct that made
// it; Read marks a guard that a value read on the host is the same (Want
// true).
type guardAttrs struct {
	Want      bool
	Construct string
	Read      bool
}

func (a guardAttrs) String() string {
	if a.Read {
		return a.Construct + " is the same"
	}
	return fmt.Sprintf("%s decided %v", a.Construct, a.Want)
}

// Expected and Failure make a guard a graph.Check, which a recording runs
// on the device.
func (a guardAttrs) Expected() bool { return a.Want }

func (a guardAttrs) Failure(got bool) error {
	return &tensor.Error{Pkg: "trace", Op: "Guard", Kind: ErrGuardFailed, Detail: a.failure(got)}
}

// failure says how the decision went another way (got, where Want was
// expected).
func (a guardAttrs) failure(got bool) string {
	if a.Read {
		return a.Construct + " differs from its value at the trace"
	}
	return fmt.Sprintf("%s decided %v at the trace and %v now", a.Construct, a.Want, got)
}

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
			c.Fail(ErrGuardFailed, "%s", a.failure(got))
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
		for _, t := range following(v, nil) {
			t.guardValue(construct, v, false)
		}
	}
	plumb.VariesInTrace = func(x any) bool { return len(following(x.(*tensor.Tensor), nil)) > 0 }
	plumb.AssignedHere = assignedHere
	plumb.HostRead = func(x any) {
		// Only the traces this goroutine runs: a read elsewhere (a
		// kernel's worker, another goroutine) is not fn's decision, and
		// a trace's tables are its own goroutine's to read.
		mine := tracesHere()
		if len(mine) == 0 {
			return
		}
		v := x.(*tensor.Tensor)
		ts := following(v, mine)
		if len(ts) == 0 || inKernel() {
			return
		}
		construct := fmt.Sprintf("the value of %s read on the host (Item, Float, ToSlice or HostBytes) at %s", tensor.Describe(v), callsite.Caller())
		for _, t := range ts {
			t.guardValue(construct, v, true)
		}
	}
}

// following returns the recording traces in which v varies between
// calls: the trace v is a value of, where v is computed from its
// arguments or variables; or, for a value computed from variables alone
// (a recipe), every live trace that follows the recipe. With among, only
// those traces (their values are their own goroutines' to read).
func following(v *tensor.Tensor, among []*tracer) []*tracer {
	considered := func(t *tracer) bool { return among == nil || slices.Contains(among, t) }
	if t := traceOf(v); t != nil {
		if considered(t) && t.Recording() && t.Derived(v) {
			return []*tracer{t}
		}
		return nil
	}
	if recipeOf(v) == nil {
		return nil
	}
	var out []*tracer
	for _, l := range flow.Live() {
		if t, ok := l.(*tracer); ok && considered(t) && t.Recording() && t.recipe(v) != nil {
			out = append(out, t)
		}
	}
	return out
}

// inKernel reports whether the caller runs inside an op's kernel
// (eager's runKernel frame, plumb.KernelFrame, is on its goroutine's stack):
// a kernel reads its inputs on the host as part of the op, which the
// graph runs again on every call; only the function's own reads decide
// what it does in Go.
func inKernel() bool {
	var pcs [128]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs[:])])
	for {
		f, more := frames.Next()
		if f.Function == plumb.KernelFrame {
			return true
		}
		if !more {
			return false
		}
	}
}

// guardValue records a guard that v, a value that varies between calls
// of t (following), holds the values it holds now on later calls: the Go
// value read from it is a constant of the graph. NaNs compare equal to
// NaNs. read says the function read v itself (the guard's message).
func (t *tracer) guardValue(construct string, v *tensor.Tensor, read bool) {
	now := plumb.Tensor.Copy(v).(*tensor.Tensor) // the values now, a constant
	same := ops.LogicalOr(ops.Eq(v, now), ops.LogicalAnd(ops.Ne(v, v), ops.Ne(now, now)))
	if v.Rank() > 0 {
		same = ops.All(same)
	}
	t.guard(guardAttrs{Want: true, Construct: construct, Read: read}, same)
}

// guard records that construct decided p (a bool scalar whose value varies
// between calls) as it did now.
func (t *tracer) Guard(construct string, p *tensor.Tensor) {
	t.guard(guardAttrs{Want: plumb.Tensor.Item(p).(bool), Construct: construct}, p)
}

// guard records the guard a on p.
func (t *tracer) guard(a guardAttrs, p *tensor.Tensor) {
	n := t.apply(guardOp, a, []*tensor.Tensor{p},
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

// noteGuardFailed says, once a Function, that a call's guard failed: to
// logf (Function.Logf) where set, and to standard error where
// EAGERFLOW_DEBUG names trace.
func noteGuardFailed(logf func(string, ...any), why string) {
	const msg = "trace: a decision the trace took on a value that varies went another way on this call (%s); the function runs eagerly on such calls, and without trying the graph first after %d in a row"
	if logf != nil {
		logf(msg, why, guardGiveUp)
	}
	if strings.Contains(os.Getenv("EAGERFLOW_DEBUG"), "trace") {
		fmt.Fprintf(debugOut, msg+"\n", why, guardGiveUp)
	}
}

// debugOut is where EAGERFLOW_DEBUG's notes go: standard error (a test's
// buffer in tests).
var debugOut io.Writer = os.Stderr

// guardGiveUp is how many calls in a row whose guards failed make
// runGuarded run fn without trying the graph (most of whose work a failed
// call wastes), and guardRetry how often it tries the graph again then.
const (
	guardGiveUp = 4
	guardRetry  = 16
)

// runGuarded runs tr on args (replayed reports a recording's replay,
// which ran the Function's tail too); when a guard fails it runs fn eagerly
// instead (logging that once), so the call returns what fn computes.
func (f *Function) runGuarded(tr *traced, args []*tensor.Tensor, wantOwned bool) (out []*tensor.Tensor, owned []bool, replayed bool, err error) {
	if !tr.hasGuards {
		if f.Partitions != nil {
			out, err := f.runPartitioned(tr, args)
			return out, make([]bool, len(out)), false, err
		}
		out, owned, replayed, _, err := f.runGraph(tr, args, wantOwned)
		return out, owned, replayed, err
	}
	if f.Partitions != nil {
		// A graph with guards was traced whole, its ops placed on the
		// devices of every partition with no transfers between them: fn
		// runs instead, as where a guard fails.
		out = f.fn(args)
		return out, make([]bool, len(out)), false, nil
	}
	if tr.misses.Load() >= guardGiveUp && tr.skipped.Add(1)%guardRetry != 0 {
		// The guards fail call after call (a value read on the host that
		// changes every call): fn runs at once, the graph tried again now
		// and then.
		out = f.fn(args)
		return out, make([]bool, len(out)), false, nil
	}
	tr.graphRuns.Add(1)
	out, owned, replayed, why, err := f.runGraph(tr, args, wantOwned)
	if why == "" {
		tr.misses.Store(0)
		return out, owned, replayed, err
	}
	tr.misses.Add(1)
	f.mu.Lock()
	first := !f.guardNoted
	f.guardNoted = true
	logf := f.Logf
	f.mu.Unlock()
	if first {
		noteGuardFailed(logf, why)
	}
	out = f.fn(args)
	return out, make([]bool, len(out)), false, nil
}

// runGraph runs tr's graph on args: replayed from its recording where
// f records (the guards checked on the device, graph.Check), else op by
// op. failed is the detail of the guard that failed, if one did (the
// call's results are then none).
func (f *Function) runGraph(tr *traced, args []*tensor.Tensor, wantOwned bool) (out []*tensor.Tensor, owned []bool, replayed bool, failed string, err error) {
	if f.Record {
		if out, owned, ok, err := tr.replay(args, f.Tail, wantOwned, f.Logf); ok {
			if why, is := guardFailure(err); is {
				return nil, nil, false, why, nil
			}
			return out, owned, true, "", err
		}
	}
	defer func() {
		if r := recover(); r != nil {
			e, _ := r.(error)
			why, is := guardFailure(e)
			if !is {
				panic(r)
			}
			out, owned, failed, err = nil, nil, why, nil
		}
	}()
	out, owned, err = tr.run(args, graph.ExecOptions{SwapStacks: f.SwapStacks}, wantOwned)
	return out, owned, false, "", err
}

// guardFailure returns the detail of err where a guard raised it.
func guardFailure(err error) (why string, failed bool) {
	var te *tensor.Error
	if errors.As(err, &te) && te.Kind == ErrGuardFailed {
		return te.Detail, true
	}
	return "", false
}

// The goroutines running a function being traced (traceCall), each with
// its innermost trace, so that a variable assigned there fails that
// trace whatever the value and whether or not fn reads the variable
// (plumb.AssignedHere): an assignment is not an op, and the graph would
// not repeat it. A goroutine fn starts is not among them.
var tracing struct {
	mu     sync.Mutex
	active atomic.Int32
	by     map[int64][]*tracer // goroutine id -> the traces it runs, innermost last
}

// tracingHere counts the calling goroutine as running t until the
// returned function is called.
func tracingHere(t *tracer) (done func()) {
	id := goid.Current()
	tracing.mu.Lock()
	if tracing.by == nil {
		tracing.by = map[int64][]*tracer{}
	}
	tracing.by[id] = append(tracing.by[id], t)
	tracing.active.Add(1)
	tracing.mu.Unlock()
	return func() {
		tracing.mu.Lock()
		if ts := tracing.by[id][:len(tracing.by[id])-1]; len(ts) > 0 {
			tracing.by[id] = ts
		} else {
			delete(tracing.by, id)
		}
		tracing.active.Add(-1)
		tracing.mu.Unlock()
	}
}

// tracesHere returns the traces the calling goroutine runs, innermost
// last: none while no trace runs anywhere, without a lookup.
func tracesHere() []*tracer {
	if tracing.active.Load() == 0 {
		return nil
	}
	id := goid.Current()
	tracing.mu.Lock()
	defer tracing.mu.Unlock()
	return slices.Clone(tracing.by[id])
}

// assignedHere notes variable x as assigned by the trace the calling
// goroutine runs, if any: nothing to look up while no trace runs anywhere.
func assignedHere(x any) {
	if ts := tracesHere(); len(ts) > 0 {
		t := ts[len(ts)-1]
		tracing.mu.Lock()
		defer tracing.mu.Unlock()
		if t.assigned == nil {
			t.assigned = map[*tensor.Tensor]bool{}
		}
		t.assigned[x.(*tensor.Tensor)] = true
	}
}
