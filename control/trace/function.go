package trace

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	_ "github.com/eagerflow/eagerflow/backend/cpu" // a traced function's ops run on the CPU unless placed elsewhere
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/internal/flow"
	"github.com/eagerflow/eagerflow/internal/plumb"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Function is a Go function over tensors that is traced into a Graph the
// first time it is called with an input signature (the dtypes and shapes
// of its arguments) and executed from that graph on later calls with the
// same signature. A new signature traces again, unless the Function was
// made with NewFunctionWithSignature and a declared signature whose
// unknown dims (-1) cover the difference: such a Function learns from its
// first three sizes how its graph follows those dims and rebuilds the
// graph for any other size without tracing (signature.go).
//
// Tracing runs fn once, eagerly, on views of the arguments, and records as
// graph nodes the ops that read the trace's values: the arguments, and
// what recorded ops made from them, whichever goroutine runs the op (fn
// must wait for the goroutines it starts). The trace's state lives in
// those tensors (tensor.Traced), as a tape's does in the tensors it
// tracks: no goroutine is singled out, a goroutine that traces and one
// that records a tape do not see each other, and traces run at once on
// several goroutines. That first call returns fn's own results. What the
// graph computes is therefore what fn computed on that call:
//   - Go values fn reads (ints, closures' variables) are constants of the
//     trace. A tensor's values fn reads on the host (Item, Float,
//     ToSlice, HostBytes) are too, and where the tensor varies between
//     calls (computed from the arguments or variables) the graph guards
//     them: a later call where they differ runs fn eagerly instead (Logf
//     is told once, naming where fn read them, and standard error where
//     EAGERFLOW_DEBUG names trace), so every call returns what fn
//     computes (after four such calls in a row, calls run fn without
//     trying the graph first, trying it again every sixteenth); decide
//     with control.Cond or ops (Where, Select) to keep such calls in the
//     graph. Printing a value is no read, and kernels' reads of their
//     inputs are not fn's.
//   - Tensors fn reads that are not its arguments are captured: a variable
//     (tensor.FlagVariable) by reference, so in-place updates are seen by
//     later calls; any other tensor by value. What fn computes from
//     variables alone (a weight penalty, a predicate on a step counter) is
//     recorded too, from the ops that made it (tensor.Traced.Recipe), so
//     later calls see the variables' new values; what fn computes from
//     captured tensors alone is a constant.
//   - control.Cond on a value computed from the arguments or variables is
//     traced as TensorFlow builds a cond: both branches are recorded (the
//     untaken one runs on this call's values just to be recorded, so it
//     must not fail on them), a Switch on the predicate for each value a
//     branch reads from outside, a Merge for each output; branches that
//     disagree on their outputs' count, dtypes or shapes fail the trace.
//   - A Cond whose predicate is computed from variables alone is traced
//     as above when its results are the trace's values (the taken branch
//     then runs a second time, recorded).
//   - control.While becomes a loop frame, when its loop values, its first
//     predicate or its values after the first iteration are the trace's
//     (a loop that reads the trace's values only through its closures is
//     found by its first iteration, which the trace then records anew), as
//     TensorFlow builds one: Enter, Merge, Switch, Exit per loop value, the
//     body once, NextIteration back to the Merge, values from outside
//     entered as loop constants. The condition and body are recorded on
//     the first iteration's values (the body runs on the initial values
//     even when the loop takes no iteration, so it must not fail on them).
//     MaxIterations becomes a counter loop value in the condition.
//     control.Scan on the trace's values becomes such a loop too, reading
//     step t with Gather and writing its outputs into stacked buffers, so
//     a traced RNN is one frame whatever its length (under a tape, one
//     frame and its gradient). Fori, and a loop on constants, variables
//     and captured tensors alone, run eagerly: their ops on the trace's
//     values or on variables are recorded op by op. Such a loop that a
//     tape records fails the trace (the call returns an error naming it):
//     pass its inputs as arguments.
//   - control.Case on such a value becomes a chain of conds (index == 0,
//     index == 1, ..., the last branch taking every other index).
//   - A While that a tape records inside fn becomes two frames, as
//     TensorFlow builds a loop's gradient: the forward loop counts its
//     iterations and pushes, at each one, the values the body's gradient
//     rules read onto stacks; the backward loop runs that many times,
//     popping them in reverse, and sums the gradients of the tensors the
//     body reads from outside. So the trip count may vary from call to
//     call. Where the loop takes no iteration, sources that eagerly get no
//     gradient (nil) get zeros from the graph. Loops nest: an inner loop's
//     frames sit in the outer ones', its trip count per outer iteration is
//     pushed too, and the outer loop moves on only once the inner one is
//     done. A loop whose body cannot be traced on the first iteration's
//     values alone is recorded iteration by iteration instead (its trip
//     count must then not vary).
//   - A Cond (or Case) on a varying value that a tape records inside fn is
//     one region of the tape; its gradient is traced as TensorFlow builds
//     it, a Cond on the same predicate of the two branches' gradients. In
//     a While's body, the predicate is pushed onto a stack at every
//     iteration and the values a branch's gradient reads only where the
//     branch was taken; the backward loop pops them likewise.
//   - A loop that cannot be a frame is traced unrolled, iteration by
//     iteration: a loop run eagerly inside a traced region (a tape made
//     inside a traced loop's body that differentiates another loop there),
//     and every loop of a function that differentiates a loop's gradient
//     again (second derivatives, Hessian-vector products): there the trace
//     reads the loop's gradient as the eager run computed it, which no
//     frame holds, so the function is traced a second time with its loops
//     unrolled (fn runs twice on that call). Each decision such a trace
//     took on a varying value (each predicate of an unrolled loop) is a
//     guard in the graph: a call where one goes the other way (another
//     trip count) runs fn eagerly instead, so every call returns what fn
//     computes; Logf is told once.
//   - Collectives on the trace's values (package collective's AllReduce,
//     Broadcast, AllGather, ReduceScatter: ordered ops, eager.Op.Ordered)
//     are nodes that communicate on every call, never folded or merged
//     and run in an order the graph fixes; a collective on captured
//     tensors alone is a constant, as any op on them is.
//   - Random tensors fn draws with tensor.RandUniform and the like (and so
//     ops.Dropout's mask) are constants of the trace: pass them in as
//     arguments to get fresh ones per call.
//   - A tape recording inside fn is traced too: the graph computes the
//     gradients (a training step traced as one graph). Variable updates
//     (Assign and the optimizers) are not ops and are not traced: return
//     the gradients and apply them after the call (nn.TracedTrainStep
//     does). An update with a value that varies between calls panics,
//     saying so, rather than run on the tracing call alone, and any other
//     assignment fails the trace: to a variable fn reads, or by the
//     goroutine running fn to any variable (a state reset to a constant;
//     a goroutine fn starts is not seen).
//   - A tape around a call records the graph's ops, so it differentiates
//     with respect to fn's arguments and variables (not other captured
//     tensors, which are constants of the trace). Loops and conds that
//     ran as tape regions while tracing leave no mark in the graph: their
//     graph is the computation alone, which the tape around a later call
//     records op by op.
//   - fn may return nil results (the gradient of a source its target does
//     not depend on); the call returns nil there too.
//
// Before the first run the graph is optimised: ops on constants only are
// folded (their traced values kept), values nothing returns are pruned,
// identical ops on identical inputs are computed once, chains of float32
// elementwise ops are fused into one pass, and each intermediate buffer is
// released once its last reader has run.
//
// A Function called on values of another's trace runs fn inline, so the
// outer graph holds its ops and control flow.
//
// A Function is safe for concurrent use. Ops that goroutines fn starts run
// on the trace's values are recorded when they run; they must not run
// while fn itself is inside a traced Cond or While.
type Function struct {
	fn func(args []*tensor.Tensor) []*tensor.Tensor
	// Logf receives the warning (given once) that fn retraces often; nil
	// discards it.
	Logf func(format string, args ...any)
	// SwapStacks runs the graphs with the values their loop gradients
	// stack kept in host memory on devices that swap (a GPU):
	// graph.ExecOptions.SwapStacks. Set it before the first call.
	SwapStacks bool
	// Record replays each signature's graph, from its first run on, as
	// one recording of its device's work where the device records
	// (device.Capturer: a GPU replays a CUDA graph, one launch where the
	// graph's ops launch a kernel or more each): graph.Record. The
	// arguments are copied into the recording's buffers and its results
	// copied out, so results stay each call's own (CallOwned owns them
	// all). It applies to graphs without collectives, with their
	// arguments on the graph's device. A straight-line graph with guards
	// (a loop's second derivative, traced unrolled) is recorded with its
	// guards run on the device: each replay is checked before the call
	// returns (a wait for the device), and a call where a decision went
	// another way runs fn eagerly, as unrecorded (the tail, recorded
	// apart, runs only after a replay whose guards held). On a device that records, a
	// signature's first call traces fn with its loops unrolled (a Scan's
	// steps, a While's iterations): where no trip count varies between
	// calls (none decided on an argument or a variable: an RNN layer over
	// the signature's steps, a counted loop) and the graph stays under
	// 65536 nodes, that straight-line graph is the one recorded; otherwise
	// fn runs again and the loops become frames (not where InputSpecs
	// leave sizes unknown). A device that records loops and branches (a
	// GPU: conditional WHILE and IF nodes) records frames and Conds with
	// the rest, each run on the device with no wait for the host; they run
	// op by op elsewhere. A loop a tape records keeps its gradient's
	// stacks on the device: MaxIterations values where the While has it;
	// otherwise as many as the trace saw, checked after each replay (a
	// wait for the device), a call that goes deeper running op by op and
	// the next recording holding at least twice as many (graph.Record).
	// A call that a
	// tape observes or a profile times runs the graph op by op, and a
	// graph whose recording fails (an op reads a value on the host) runs
	// so on every call. Each recording keeps the device memory of its
	// graph's intermediates until f is garbage. While a recording is made
	// (the first call from a graph), the device records all the work
	// queued on it: other goroutines must not queue work on it meanwhile.
	// Set it before the first call.
	Record bool
	// Partitions, when not nil, cuts each signature's graph by device
	// (graph.PartitionWith) and runs the partitions at once, each by an
	// executor of its own; with RankOf, over the processes of an Exchange
	// (a collective.Rendezvous: every process makes the same Function and
	// calls it with the same arguments, and runs its own partitions; the
	// results of others' partitions are nil). The call that traces runs
	// fn here whole, then the partitions as later calls do; where the graph
	// has guards (its loops or Conds decided at the trace), every call runs
	// fn here, as a call whose guard fails would. Set it before the first
	// call.
	Partitions *graph.PartitionOptions
	// Tail, when not nil, is work every call does on fn's results after
	// the graph (a training step's optimizer update on its gradients),
	// and a call returns only the first Tail.Keep results: with Record,
	// the recording holds it (graph.RecordTail: the results past Keep
	// never leave the recording), elsewhere Tail.Run runs it, and the
	// results past Keep that the call made are released. Its results'
	// indices are fn's (nil results included). Set it before the first
	// call.
	Tail *graph.Tail

	mu     sync.Mutex
	graphs map[string]*traced
	traces int
	warned bool
	// guardNoted: Logf was told that a guard failed.
	guardNoted bool
	sig        []InputSpec // nil: every signature traces
	gen        sizeRules
}

// RetraceWarning is how many traces a Function makes before it warns.
const RetraceWarning = 5

// NewFunction wraps fn. fn takes and returns slices of tensors.
func NewFunction(fn func(args []*tensor.Tensor) []*tensor.Tensor) *Function {
	return &Function{fn: fn, graphs: map[string]*traced{}}
}

// Traces returns how many traces f has made.
func (f *Function) Traces() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.traces
}

// Graph returns the graph traced for args' signature, or nil.
func (f *Function) Graph(args ...*tensor.Tensor) *graph.Graph {
	f.mu.Lock()
	defer f.mu.Unlock()
	if tr := f.graphs[signature(args)]; tr != nil {
		return tr.g
	}
	return nil
}

// traced is one signature's graph, with what the trace knew of fn's
// results and decisions.
type traced struct {
	g *graph.Graph
	// parts is g cut by Function.Partitions, made on first use (or why
	// it could not be).
	parts    *graph.Partitioned
	partsErr error
	// nilResults marks the results fn returned as nil (a gradient of an
	// unconnected source): they are not among the graph's results, and a
	// call gives nil there, as fn did.
	nilResults []bool
	// hasGuards says the graph checks decisions its trace took (a call
	// where one goes another way runs fn eagerly).
	hasGuards bool
	// misses counts the calls in a row whose guards failed, graphRuns
	// every run of the graph (runGuarded), skipped the calls that ran fn
	// without trying the graph.
	misses, graphRuns, skipped atomic.Int64
	// rec is the graph's recording (Function.Record), made on its first
	// run; recordErr says why Record failed.
	recMu     sync.Mutex
	rec       *graph.Recorded
	recordErr error
}

// replay runs tr's graph from its recording (Function.Record), making it
// on the first run; ok is false, with nothing run, where the call must
// run the graph op by op: a tape observes, a profile times the ops, or
// the graph cannot be recorded.
// Why the graph cannot be recorded goes to logf (where not nil) once.
func (tr *traced) replay(args []*tensor.Tensor, tail *graph.Tail, wantOwned bool, logf func(string, ...any)) (out []*tensor.Tensor, owned []bool, ok bool, err error) {
	if eager.Observing() || eager.Profiling() {
		return nil, nil, false, nil
	}
	nils := tr.nilResults
	if tail != nil && nils != nil {
		nils = nils[:tail.Keep]
	}
	tr.recMu.Lock()
	if tr.rec == nil && tr.recordErr == nil {
		rec, err := graph.RecordTail(tr.g, tr.graphTail(tail), args...)
		if err != nil && (eager.Observing() || eager.Profiling()) {
			// A tape or a profile began meanwhile, on another goroutine:
			// a later call records.
			tr.recMu.Unlock()
			return nil, nil, false, nil
		}
		if err != nil {
			tr.recordErr = err
			if _, records := tr.g.Device.(device.Capturer); records {
				noteUnrecorded(logf, err)
			}
		} else {
			tr.rec = rec
			// The recording's memory goes back with tr.
			runtime.AddCleanup(tr, (*graph.Recorded).Release, rec)
		}
	}
	rec := tr.rec
	tr.recMu.Unlock()
	if rec == nil {
		return nil, nil, false, nil
	}
	if out, err = rec.Run(args...); err != nil {
		return nil, nil, true, err
	}
	if wantOwned {
		owned = make([]bool, len(out))
		for i := range owned {
			owned[i] = tail == nil || !tail.Lend // a lent result is the recording's
		}
		owned = withNils(nils, owned)
	}
	return withNils(nils, out), owned, true, nil
}

// noteUnrecorded says why a graph runs op by op under Record: to logf
// (Function.Logf) where set, and to standard error where EAGERFLOW_DEBUG
// names record.
func noteUnrecorded(logf func(string, ...any), err error) {
	const msg = "trace: Function.Record: the graph runs op by op: %v"
	if logf != nil {
		logf(msg, err)
	}
	if strings.Contains(os.Getenv("EAGERFLOW_DEBUG"), "record") {
		fmt.Fprintf(os.Stderr, msg+"\n", err)
	}
}

// RecordError returns why the graph of args' signature runs op by op
// under Record: graph.Record's error (control flow a device cannot
// record, an op that reads a value on the host, ...), or, where a call
// outgrew the recording's stacks, why it could not be recorded again
// (graph.Recorded.Err). It is nil where the graph is recorded, Record is
// off, or no call of that signature has run its graph yet (the first
// call traces). EAGERFLOW_DEBUG=record prints each such error once, when
// it happens.
func (f *Function) RecordError(args ...*tensor.Tensor) error {
	f.mu.Lock()
	tr := f.graphs[signature(args)]
	f.mu.Unlock()
	if tr == nil {
		return nil
	}
	tr.recMu.Lock()
	defer tr.recMu.Unlock()
	if tr.rec != nil {
		return tr.rec.Err()
	}
	return tr.recordErr
}

// graphTail is tail (nil: none) over tr's graph's results, which leave
// out fn's nil results.
func (tr *traced) graphTail(tail *graph.Tail) *graph.Tail {
	if tail == nil || tr.nilResults == nil {
		return tail
	}
	keep := 0
	for _, isNil := range tr.nilResults[:tail.Keep] {
		if !isNil {
			keep++
		}
	}
	gt := &graph.Tail{Keep: keep, Lend: tail.Lend, Record: func(results []*tensor.Tensor) (func() error, error) {
		return tail.Record(withNils(tr.nilResults, results))
	}}
	if tail.Run != nil {
		gt.Run = func(results []*tensor.Tensor) error { return tail.Run(withNils(tr.nilResults, results)) }
	}
	return gt
}

// runTail runs f's tail (if any) on a call's results that no recording
// ran it on, releases the results past its Keep that the call made, and
// returns the first Keep.
func (f *Function) runTail(out []*tensor.Tensor, owned []bool) ([]*tensor.Tensor, []bool, error) {
	if f.Tail == nil {
		return out, owned, nil
	}
	if f.Tail.Keep < 0 || f.Tail.Keep > len(out) {
		return nil, nil, fmt.Errorf("trace: the Function's tail keeps %d of %d results", f.Tail.Keep, len(out))
	}
	var err error
	if f.Tail.Run != nil {
		err = f.Tail.Run(out)
	}
	for i := f.Tail.Keep; i < len(out); i++ {
		if owned != nil && owned[i] {
			out[i].Release()
		}
	}
	if owned != nil {
		owned = owned[:f.Tail.Keep]
	}
	return out[:f.Tail.Keep], owned, err
}

// run executes tr's graph on args; owned marks the results the run made
// (graph.Owned), when asked for (nil otherwise).
func (tr *traced) run(args []*tensor.Tensor, opts graph.ExecOptions, wantOwned bool) (out []*tensor.Tensor, owned []bool, err error) {
	out, err = graph.ExecuteWith(tr.g, opts, args...)
	if err != nil {
		return nil, nil, err
	}
	if wantOwned {
		owned = withNils(tr.nilResults, graph.Owned(tr.g, args, out))
	}
	return withNils(tr.nilResults, out), owned, nil
}

// runPartitioned runs tr's graph cut by f.Partitions (cut on first use).
func (f *Function) runPartitioned(tr *traced, args []*tensor.Tensor) ([]*tensor.Tensor, error) {
	f.mu.Lock()
	if tr.parts == nil && tr.partsErr == nil {
		tr.parts, tr.partsErr = graph.PartitionWith(tr.g, *f.Partitions)
	}
	p, err := tr.parts, tr.partsErr
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out, err := p.Execute(args...)
	if err != nil {
		return nil, err
	}
	return withNils(tr.nilResults, out), nil
}

// withNils puts the nil results of fn (the zero value) back among the
// graph's results (or what is known of them).
func withNils[T any](nilResults []bool, out []T) []T {
	if nilResults == nil {
		return out
	}
	all := make([]T, len(nilResults))
	j := 0
	for i, isNil := range nilResults {
		if !isNil {
			all[i] = out[j]
			j++
		}
	}
	return all
}

// Call runs f on args: from its graph when one was traced for their
// signature, else by tracing. Ops' errors panic as they do eagerly; an
// argument count that differs from the trace, or a trace that cannot be
// made, is an error.
func (f *Function) Call(args ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	out, _, err := f.call(args, false)
	return out, err
}

// CallOwned is Call that also reports, for each result, whether this call
// made it and nothing else holds it: a fresh output of the graph's ops,
// not an argument, a constant or captured value, nor a result listed
// before it. The caller may Release those once done with them (a training
// step's gradients, after the optimizer's update), so that their buffers
// serve the next call. A call that traces, or that runs fn eagerly, owns
// none.
func (f *Function) CallOwned(args ...*tensor.Tensor) ([]*tensor.Tensor, []bool, error) {
	return f.call(args, true)
}

// call is Call, reporting the owned results when wantOwned.
func (f *Function) call(args []*tensor.Tensor, wantOwned bool) ([]*tensor.Tensor, []bool, error) {
	if f.fn == nil {
		return nil, nil, errors.New("trace: the Function was made of a nil function")
	}
	if traceOf(args...) != nil {
		// Called on values of another function's trace: run fn so that
		// its ops and control flow are traced inline there.
		out := f.fn(args)
		return f.runTail(out, make([]bool, len(out)))
	}
	if f.sig != nil {
		if err := checkSignature(f.sig, args); err != nil {
			return nil, nil, err
		}
	}
	key := signature(args)
	f.mu.Lock()
	tr := f.graphs[key]
	if sizes := unknownSizes(f.sig, args); tr == nil && f.gen.trusted && !f.gen.check && f.gen.covers(sizes) {
		var err error
		if tr, err = f.gen.build(sizes); err != nil {
			f.mu.Unlock()
			return nil, nil, err
		}
		f.graphs[key] = tr
	}
	f.mu.Unlock()
	if tr != nil {
		out, owned, replayed, err := f.runGuarded(tr, args, wantOwned || f.Tail != nil)
		if err != nil || replayed {
			return out, owned, err
		}
		out, owned, err = f.runTail(out, owned)
		if !wantOwned {
			owned = nil
		}
		return out, owned, err
	}
	var out []*tensor.Tensor
	var err error
	if f.unrollsLoops(args) {
		// Loops unrolled make a straight-line graph, which the device
		// records, where their trip counts do not vary between calls (no
		// guard); otherwise fn runs again, its loops as frames.
		out, tr, err = traceCall(f.fn, args, true, maxUnrolledNodes)
		if err != nil || tr.hasGuards || !tr.g.StraightLine() {
			out, tr, err = traceCall(f.fn, args, false, 0)
		}
	} else {
		out, tr, err = traceCall(f.fn, args, false, 0)
	}
	if errors.Is(err, errUnroll) {
		// A loop's gradient is differentiated again: trace once more, loops
		// unrolled (fn runs a second time).
		out, tr, err = traceCall(f.fn, args, true, 0)
	}
	if err != nil {
		return nil, nil, err
	}
	if f.Partitions != nil && !tr.hasGuards {
		if out, err = f.runPartitioned(tr, args); err != nil {
			return nil, nil, err
		}
	}
	f.mu.Lock()
	f.graphs[key] = tr
	f.traces++
	var note string
	if f.sig != nil {
		note = f.gen.learn(tr, unknownSizes(f.sig, args), key)
	}
	warn := f.traces > RetraceWarning && !f.warned && f.Logf != nil
	f.warned = f.warned || warn
	n := f.traces
	logf := f.Logf
	f.mu.Unlock()
	if note != "" && logf != nil {
		logf("%s", note)
	}
	if warn {
		logf("trace: Function traced %d times (signatures: %s, ...); give it inputs of fewer distinct shapes", n, key)
	}
	return f.runTail(out, make([]bool, len(out)))
}

// maxUnrolledNodes bounds a trace that unrolls loops for a recording.
const maxUnrolledNodes = 1 << 16

// errTooLong fails a trace whose graph outgrew its maxNodes.
var errTooLong = errors.New("trace: the unrolled graph grew past its bound")

// unrollsLoops reports whether f first traces args' signature with its
// loops unrolled: with Record, on a device that records, where every
// signature is exact (no size left unknown to serve other lengths).
func (f *Function) unrollsLoops(args []*tensor.Tensor) bool {
	if !f.Record || f.sig != nil || len(args) == 0 || args[0] == nil {
		return false
	}
	_, records := args[0].Device().(device.Capturer)
	return records
}

// signature is the dtypes and shapes of args, and their devices where not
// the host, e.g. "float32[2 3],int64[]" or "float32[2 3]@cpu:1": a graph
// holds constants on its arguments' device and is fused for its kind.
func signature(args []*tensor.Tensor) string {
	b := make([]byte, 0, 16*len(args))
	for i, a := range args {
		if i > 0 {
			b = append(b, ',')
		}
		if a == nil {
			b = append(b, "nil"...)
			continue
		}
		b = append(b, a.DType().String()...)
		b = append(b, '[')
		for j, d := range a.Shape() {
			if j > 0 {
				b = append(b, ' ')
			}
			b = strconv.AppendInt(b, int64(d), 10)
		}
		b = append(b, ']')
		if dev := a.Device(); dev != device.Host() {
			b = append(b, '@')
			b = append(b, dev.Name()...)
		}
	}
	return string(b)
}

// tracer records the ops of one trace. Its state is carried by tensors,
// as a tape's is: the tensors it gives fn (views of the arguments) and
// those its recorded ops make are marked as its values
// (tensor.Traced.Trace), and an op is recorded when it reads one, on
// whichever goroutine it runs. Ops that read variables but no value of a
// trace leave a recipe on their outputs (tensor.Traced.Recipe), from which
// a trace that later reads such an output records how it was computed.
type tracer struct {
	g    *graph.Graph
	vals map[*tensor.Tensor]graph.Output
	// assigned holds the variables fn's goroutine assigned (under
	// tracing.mu; assignedHere).
	assigned map[*tensor.Tensor]bool
	// varies marks the nodes whose value can differ between calls: the
	// arguments, captured variables and the ops that read either.
	varies map[*graph.Node]bool
	ctx    *traceCtx // the Cond branch or While frame being recorded, if any
	// iter marks nodes whose value is per iteration of the enclosing loop
	// frame (loop Merges and what reads them).
	iter map[*graph.Node]bool
	// branchOf is the Cond branch a node lives in (dead when it is not
	// taken), for the nodes made inside one.
	branchOf map[*graph.Node]*traceCtx
	loops    atomic.Int32 // While frames made, for their names
	conds    atomic.Int32 // Conds made, for their Switches' and Merges' Cond
	// gradConds is above 0 while a Cond's gradient is traced (as a Cond).
	gradConds atomic.Int32
	paused    atomic.Int32 // >0 while a loop finishes eagerly, unrecorded
	failure   atomic.Pointer[error]
	// unroll traces loops iteration by iteration (with guards), for
	// functions whose loops cannot be frames (see trace_guard.go).
	unroll bool
	// maxNodes, when above 0, fails the trace (errTooLong) once its graph
	// holds more nodes: an unrolled trace of a long loop is abandoned for
	// the loop as a frame.
	maxNodes int
	// hasGuards says the trace recorded a guard.
	hasGuards bool
	// untraced holds the tensors ops made while the trace was paused.
	untraced map[weak.Pointer[tensor.Tensor]]bool
	// live is set while fn runs: the marks of a finished trace are inert.
	live atomic.Bool
	seq  uint64 // traceStarts when it started
	// ref is what the trace's tensors carry: it names the trace while it
	// is live and nothing afterwards, so that a tensor kept from a trace
	// does not keep the trace's state.
	ref *traceRef
	// mu serialises the recording of ops that reach the trace from
	// several goroutines at once.
	mu sync.Mutex
}

var (
	installTracer sync.Once
	// liveCount is how many traces are live: while none is, ops on
	// variables leave no recipes (a tape's training step pays nothing).
	liveCount atomic.Int32
)

// Mark returns where t stands (flow.Tracer).
func (t *tracer) Mark() flow.Mark { return flow.Mark{Nodes: t.g.Size(), Loops: int(t.loops.Load())} }

// RollbackTo drops what t recorded since m (flow.Tracer).
func (t *tracer) RollbackTo(m flow.Mark) {
	t.rollback(m.Nodes)
	t.loops.Store(int32(m.Loops))
}

// traceOf returns the live trace one of xs is a value of, or nil.
func traceOf(xs ...*tensor.Tensor) *tracer {
	for _, x := range xs {
		if x == nil {
			continue
		}
		if m := x.Traced(); m != nil {
			if r, ok := m.Trace.(*traceRef); ok {
				if t := r.Load(); t != nil && t.live.Load() {
					return t
				}
			}
		}
	}
	return nil
}

// traceRef points to a live trace, nil once it is done.
type traceRef struct{ atomic.Pointer[tracer] }

// Live reports whether the trace is still being recorded (what package
// collective asks of the tensors it is given).
func (r *traceRef) Live() bool { return r.Tracer() != nil }

// Tracer returns the trace while it is live (flow.Ref).
func (r *traceRef) Tracer() flow.Tracer {
	if t := r.Load(); t != nil && t.live.Load() {
		return t
	}
	return nil
}

// markValue marks x as a value of t.
func (t *tracer) markValue(x *tensor.Tensor) { plumb.Tensor.SetTraced(x, &tensor.Traced{Trace: t.ref}) }

// Recording reports whether t records ops now: not while a traced loop
// finishes eagerly, nor once the trace has failed or ended (flow.Tracer).
func (t *tracer) Recording() bool {
	return t != nil && t.live.Load() && t.failure.Load() == nil && t.paused.Load() == 0
}

// Unroll reports whether t records loops iteration by iteration
// (flow.Tracer).
func (t *tracer) Unroll() bool { return t.unroll }

// PassThrough runs fn unrecorded; the copies of xs it returns stand for xs
// in the graph (flow.Tracer).
func (t *tracer) PassThrough(xs []*tensor.Tensor, fn func() []*tensor.Tensor) []*tensor.Tensor {
	var ys []*tensor.Tensor
	t.unrecorded(func() { ys = fn() })
	for i, y := range ys {
		v, ok := t.vals[xs[i]]
		switch {
		case !ok || y == xs[i]:
		case y.Device() != xs[i].Device():
			// fn moved it (a placement scope's copy, which the trace did
			// not see): the graph moves it too, or an op placed where y is
			// would read xs[i]'s value where xs[i] is.
			n := t.apply(toDeviceOp(), opattr.DeviceAttrs{Device: y.Device()}, []*tensor.Tensor{xs[i]}, []eager.Out{specOf(y)})
			n.Device = xs[i].Device()
			t.setVal(y, n.Out(0))
		default:
			t.setVal(y, v)
		}
	}
	return ys
}

// toDeviceOp is package ops' ToDevice.
var toDeviceOp = sync.OnceValue(func() *eager.Op {
	for _, op := range eager.Ops() {
		if op.Name == "ToDevice" {
			return op
		}
	}
	panic("trace: no ToDevice op registered")
})

// setVal makes v the graph value of x, a tensor the trace made, and marks
// x as the trace's.
func (t *tracer) setVal(x *tensor.Tensor, v graph.Output) {
	t.vals[x] = v
	t.markValue(x)
}

type traceObserver struct{}

func (traceObserver) Observe(c *eager.Call, outs []*tensor.Tensor) {
	t := traceOf(c.Inputs...)
	if t == nil {
		if liveCount.Load() > 0 {
			noteRecipe(c, outs)
			noteCommunicated(c, outs)
		}
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.err() != nil:
	case t.paused.Load() > 0:
		t.noteUntraced(outs)
	default:
		t.record(c, outs)
		if t.maxNodes > 0 && len(t.g.Nodes) > t.maxNodes {
			t.fail(errTooLong)
		}
	}
}

// recipe is how a tensor was computed from variables: output index of
// call, which had outputs of specs; seq is traceStarts when it was made.
type recipe struct {
	call  *eager.Call
	index int
	specs []eager.Out
	seq   uint64
}

// traceStarts counts the traces started: a trace follows only the recipes
// made since it started (a value computed from variables before it is a
// tensor it captures, by value).
var traceStarts atomic.Uint64

// recipe returns x's recipe if t follows it, or nil.
func (t *tracer) recipe(x *tensor.Tensor) *recipe {
	if r := recipeOf(x); r != nil && r.seq >= t.seq {
		return r
	}
	return nil
}

// recipeOf returns x's recipe, or nil.
func recipeOf(x *tensor.Tensor) *recipe {
	if m := x.Traced(); m != nil {
		r, _ := m.Recipe.(*recipe)
		return r
	}
	return nil
}

// noteRecipe leaves a recipe on the outputs of c, an op no trace records,
// when it reads a variable or a tensor with a recipe: a trace reading an
// output later records the ops that computed it from the variables, so
// that its graph reads the variables' values of each call.
func noteRecipe(c *eager.Call, outs []*tensor.Tensor) {
	for _, x := range c.Inputs {
		if x != nil && (x.IsVariable() || recipeOf(x) != nil) {
			specs := make([]eager.Out, len(outs))
			for i, o := range outs {
				specs[i] = specOf(o)
			}
			for i, o := range outs {
				plumb.Tensor.SetTraced(o, &tensor.Traced{Recipe: &recipe{call: c, index: i, specs: specs, seq: traceStarts.Load()}})
			}
			return
		}
	}
}

func (t *tracer) record(c *eager.Call, outs []*tensor.Tensor) {
	// Constant folding: an op whose inputs are all constants of the trace
	// gave the value it will always give; its outputs are captured as
	// constants when something reads them.
	// An ordered op (a collective) communicates on every call: never
	// folded.
	folded := len(c.Inputs) > 0 && !c.Op.Ordered
	for _, x := range c.Inputs {
		if t.Derived(x) {
			folded = false
			break
		}
	}
	if folded {
		// Its outputs are constants of the trace, unless an input is a
		// value the eager run made beside the trace: then so are they.
		for _, x := range c.Inputs {
			if t.readsUntraced(x) {
				t.noteUntraced(outs)
				break
			}
		}
		return
	}
	specs := make([]eager.Out, len(outs))
	for i, o := range outs {
		specs[i] = specOf(o)
	}
	n := t.apply(c.Op, c.Attrs, c.Inputs, specs)
	n.Keep = c.Op.Ordered // it runs though nothing reads it
	n.Device = c.Device   // where it ran: graph.Placement trusts it
	for i, o := range outs {
		t.setVal(o, n.Out(i))
	}
}

// apply records an op reading inputs (routed into the current context) and
// returns its node.
func (t *tracer) apply(op *eager.Op, attrs any, inputs []*tensor.Tensor, specs []eager.Out) *graph.Node {
	ins := make([]graph.Output, len(inputs))
	for i, x := range inputs {
		ins[i] = t.route(t.ctx, t.value(x))
	}
	n := t.g.Apply(op, attrs, len(specs), ins...)
	for _, in := range ins {
		t.iter[n] = t.iter[n] || t.iter[in.Node]
	}
	if ctx := t.ctx; ctx != nil && ctx.frame != "" && !t.iter[n] {
		// Directly in a loop frame and reading only loop constants: run
		// (and die) with the iteration, as TensorFlow's pivot makes it.
		n.Control = append(n.Control, ctx.pivot)
		t.iter[n] = true
	}
	if ctx := t.ctx; ctx != nil && ctx.frame == "" {
		t.branchOf[n] = ctx
		if !t.readsFrom(ctx, ins) {
			// In a Cond branch reading nothing routed into it (only
			// constants and variables): run only when the branch is taken.
			n.Control = append(n.Control, t.branchPivot(ctx))
		}
	}
	n.Specs = specs
	t.varies[n] = true // it was not folded: an input varies
	return n
}

// communicated marks the outputs of an ordered op that no trace
// recorded and whose result comes from other processes (its attributes
// say Remote: a receive, a broadcast off its root), made while traces
// were live: a trace that captures one fails, since its graph would hold
// what the other process sent on the tracing call alone. (A collective
// that combines this rank's captured tensors with the others' is a
// constant of the trace, as any op on captured tensors is: every rank's
// is the same call after call in code that every rank runs alike.)
type communicated struct {
	op  string
	seq uint64 // traceStarts when it was made
}

// noteCommunicated marks c's outputs when c is an ordered op, or reads a
// marked value (what is computed from an exchange is one too), and no
// recipe covers them.
func noteCommunicated(c *eager.Call, outs []*tensor.Tensor) {
	mark := &communicated{op: c.Op.Name, seq: traceStarts.Load()}
	if r, ok := c.Attrs.(interface{ Remote() bool }); !c.Op.Ordered || !ok || !r.Remote() {
		mark = nil
		for _, x := range c.Inputs {
			if m := x.Traced(); m != nil {
				if cm, ok := m.Recipe.(*communicated); ok {
					mark = cm
					break
				}
			}
		}
	}
	if mark == nil {
		return
	}
	for _, o := range outs {
		if o.Traced() == nil {
			plumb.Tensor.SetTraced(o, &tensor.Traced{Recipe: mark})
		}
	}
}

// specOf is x's dtype and shape, as node specs record them.
func specOf(x *tensor.Tensor) eager.Out { return eager.Out{DType: x.DType(), Shape: x.Shape()} }

// value returns the graph value of x, capturing it as a constant when the
// trace has not seen it: a variable by reference, anything else through a
// view of its own so that a later Release by its owner cannot free it.
func (t *tracer) value(x *tensor.Tensor) graph.Output {
	if v, ok := t.vals[x]; ok {
		return v
	}
	if t.readsUntraced(x) {
		// A value the eager run made beside the trace: as a constant it
		// would hold this call's value in every later call.
		t.fail(fmt.Errorf("%w (%s)", errUnroll, tensor.Describe(x)))
	}
	if m := x.Traced(); m != nil {
		if c, ok := m.Recipe.(*communicated); ok && c.seq >= t.seq {
			t.fail(fmt.Errorf("trace: the result of %s (%s) is read by the traced function, but its inputs were not values of the trace "+
				"(captured tensors), so it ran once, while tracing, and the graph would hold that call's result: "+
				"give it a value computed from the function's arguments", c.op, tensor.Describe(x)))
		}
	}
	if r := t.recipe(x); r != nil {
		// Computed from variables beside the trace: record how.
		n := t.apply(r.call.Op, r.call.Attrs, r.call.Inputs, r.specs)
		v := n.Out(r.index)
		t.vals[x] = v
		return v
	}
	if x.ValuesDropped() {
		// A tape's stand-in for an intermediate of a loop it recorded (a
		// recipe reached it: the loop ran on variables and captured
		// tensors alone, beside the trace).
		t.fail(fmt.Errorf("trace: the traced function computes a result from variables and captured tensors alone "+
			"through a loop a tape recorded; pass the loop's inputs as arguments so that the loop is traced (%s)", tensor.Describe(x)))
		return t.g.Constant(tensor.Zeros(x.DType(), x.Shape()...))
	}
	c := x
	if !x.IsVariable() {
		c = x.View(x.Shape(), x.Layout())
	}
	v := t.g.Constant(c)
	v.Node.Specs = []eager.Out{specOf(x)}
	t.vals[x] = v
	t.varies[v.Node] = x.IsVariable()
	return v
}

// assignedDuring fails a trace one of whose captured variables was
// assigned after the trace began (before is the process's count of
// assignments then): fn assigned it, and an assignment is not an op, so
// the graph, which reads the variable, would not repeat it. (A value
// that varies between calls is refused at the assignment itself; this
// catches the others, a constant's.) Another goroutine assigning a
// variable fn reads while fn runs is a race the variables forbid.
func (t *tracer) assignedDuring(before uint64) error {
	for x := range t.vals {
		if x.IsVariable() && plumb.Tensor.Version(x) > before {
			return errAssigned(x)
		}
	}
	tracing.mu.Lock()
	defer tracing.mu.Unlock()
	for x := range t.assigned { // by fn's goroutine, read by the trace or not
		return errAssigned(x)
	}
	return nil
}

// errAssigned fails a trace during which variable x was assigned.
func errAssigned(x *tensor.Tensor) error {
	return fmt.Errorf("trace: variable %q was assigned while the function was traced: an assignment is not an op, "+
		"so the graph would not repeat it on later calls; return the value and assign it after the call", plumb.VariableName(x))
}

// derived reports whether x's value can differ between calls: a value the
// trace computed from its arguments or variables, or a variable itself or
// a value computed from variables alone (read afresh by every call,
// whether or not the trace has seen it yet).
func (t *tracer) Derived(x *tensor.Tensor) bool {
	if x.IsVariable() || t.recipe(x) != nil {
		return true
	}
	v, ok := t.vals[x]
	return ok && t.varies[v.Node]
}

// traceCall runs fn on args while recording, and returns its results and
// the pruned graph. unroll traces loops iteration by iteration.
func traceCall(fn func([]*tensor.Tensor) []*tensor.Tensor, args []*tensor.Tensor, unroll bool, maxNodes int) ([]*tensor.Tensor, *traced, error) {
	installTracer.Do(func() { eager.AddObserver(traceObserver{}) })
	t := &tracer{g: &graph.Graph{}, vals: map[*tensor.Tensor]graph.Output{}, varies: map[*graph.Node]bool{}, iter: map[*graph.Node]bool{},
		branchOf: map[*graph.Node]*traceCtx{}, unroll: unroll, maxNodes: maxNodes, ref: &traceRef{}, seq: traceStarts.Add(1)}
	t.ref.Store(t)
	// fn gets the arguments' Identity (a view, which a tape around the call
	// follows back to the argument), marked as the placeholders' values:
	// the caller's tensors stay unmarked, and an argument passed twice is
	// two inputs of the graph.
	in := make([]*tensor.Tensor, len(args))
	for i, a := range args {
		if a == nil {
			return nil, nil, fmt.Errorf("trace: Function argument %d is nil", i)
		}
		if i == 0 {
			t.g.Device = a.Device()
		}
		p := t.g.Input(fmt.Sprintf("arg%d", i))
		t.varies[p.Node] = true
		p.Node.Specs = []eager.Out{specOf(a)}
		in[i] = ops.Identity(a)
		t.setVal(in[i], p)
	}
	assignedBefore := plumb.Tensor.Assignments() // a captured variable assigned after it was fn's doing
	t.live.Store(true)
	flow.Started(t)
	liveCount.Add(1)
	eager.Activate()
	var out []*tensor.Tensor
	func() {
		defer tracingHere(t)()
		defer func() {
			eager.Deactivate()
			t.live.Store(false)
			t.ref.Store(nil)
			flow.Ended(t)
			liveCount.Add(-1)
		}()
		out = fn(in)
	}()
	if err := t.err(); err != nil {
		return nil, nil, err
	}
	if err := t.assignedDuring(assignedBefore); err != nil {
		return nil, nil, err
	}
	tr := &traced{g: t.g}
	for i, o := range out {
		if o == nil {
			if tr.nilResults == nil {
				tr.nilResults = make([]bool, len(out))
			}
			tr.nilResults[i] = true
			continue
		}
		t.g.Result = append(t.g.Result, t.value(o))
	}
	if err := t.err(); err != nil { // reading a result recorded how variables made it
		return nil, nil, err
	}
	t.g.Optimize()
	tr.hasGuards = t.hasGuards
	return out, tr, nil
}
