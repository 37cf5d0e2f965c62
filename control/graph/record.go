package graph

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Recorded is a run of a graph that its device recorded (device.Capturer:
// a GPU records it as a CUDA graph) and replays with one launch, where
// Execute launches a kernel or more per op. The recording reads its
// arguments from buffers of its own and writes its results into others:
// Run copies the arguments in, replays, and copies the results out into
// fresh tensors, so each call's results are its own. The graph's
// constants and the variables it reads are read where they are at every
// replay (a variable's buffer is its for life; tape.Variable), so in-place
// updates between runs are seen.
//
// A Recorded is safe for concurrent use (runs take turns: the
// recording's buffers are shared). Release frees its device memory.
type Recorded struct {
	g      *Graph
	dev    device.Device
	specs  []eager.Out // the arguments' dtypes and shapes
	tail   *Tail
	run    func([]*tensor.Tensor) []*tensor.Tensor // the graph's work, recorded
	lg     *loopGraph                              // g lowered, where it has control flow
	mu     sync.Mutex
	rec    device.Recording
	in     []*tensor.Tensor // the recording's arguments
	out    []*tensor.Tensor // the recording's results
	keep   int              // how many results Run copies out
	lend   bool             // Run returns them uncopied (Tail.Lend)
	before func() error     // the tail's, before each replay (or nil)
	closed bool
	// Where g's loop gradients keep stacks of guessed depth (record_grow.go):
	// the tail's own recording, replayed once a run is known to have kept
	// every stack's values; the recording's overflow flag and its stacks
	// of guessed depth; a run op by op's lent results (released by the
	// next run); why the recording could not be made again (the runs then
	// go op by op).
	tailRec    device.Recording
	over       *tensor.Tensor
	guessed    []*liveStack
	lent       []*tensor.Tensor
	unrecorded error
	// The graph's checks, done on the device (record_checks.go), and the
	// recording's results that say whether they held: the flag, then
	// each check's failure where there are several.
	checks   []Check
	checkOut []*tensor.Tensor
}

// A Tail is work on a graph's results done after the graph on every run
// (an optimizer's step on the gradients the graph computes), which a
// recording holds with the graph (RecordTail): one replay then runs both.
type Tail struct {
	// Keep is how many of the graph's leading results a run returns; the
	// others are the tail's alone.
	Keep int
	// Lend makes a recording's run return its kept results themselves,
	// not copies (a training step's loss, read at once): valid until the
	// next run, which overwrites them; the caller must not release them.
	Lend bool
	// Run does the work on a run's results, op by op: where the graph
	// runs unrecorded (trace.Function.Tail), or a run outgrew its
	// recording's stacks (Record).
	Run func(results []*tensor.Tensor) error
	// Record queues the same work on the recording's results while the
	// device records (once per recording; it must not wait for the
	// device) and returns what must run on the host before every replay
	// (write the step's constants the recorded work reads,
	// tape.StepRecord), or an error, the recording then abandoned.
	Record func(results []*tensor.Tensor) (before func() error, err error)
}

// Record records a run of g on arguments of args' dtypes and shapes (their
// values are not read, and nothing runs: the first Run does). g must be
// straight-line (no control-flow nodes, as Execute's plan runs), or have
// as its only control flow the loops and branches a tracer builds from
// While and Cond (frames and Conds, nested in any way, in a loop's
// condition too; a loop gradient's stacks on a device.PositionCopier) on a
// device that records them (device.LoopCapturer: a GPU's conditional WHILE
// and IF nodes), which then run on the device with no wait for the host
// (record_regions.go, record_stacks.go). A straight-line graph's check
// nodes (Check: a trace's guards) run on the device, each Run reading
// after the replay whether they held (a wait) and failing with the first
// failed check's error, the tail not run (record_checks.go); a graph with
// control flow and checks is not recorded. g must have no ordered op (a
// collective, a transfer), and every result an op's output (or a loop's
// Exit, a Cond's Merge); args must be on g's device, which must record
// (device.Capturer), and no tape may observe (it would see no op). Where
// one of these fails, or an op waits for the device while recorded (reads
// a value on the host), Record returns an error wrapping device.ErrCapture
// and the caller runs g with Execute instead; an op's own error is
// returned as it is.
//
// A loop gradient's stack whose depth the graph does not bound (a While
// without MaxIterations: Node.Capacity 0) needs a device.LimitCounter:
// the recording's stack holds Node.Depth values (the trace's), and Run
// checks after each replay that none was pushed past that (a wait for
// the device); a run that went deeper runs g op by op (Execute, then the
// tail's Run, which such a tail must have), and the next Run records
// again with room for at least twice as many (record_grow.go).
//
// While Record runs, the device records all the work queued on it: other
// goroutines must not queue work on the same device meanwhile; so too
// during a Run that records again.
func Record(g *Graph, args ...*tensor.Tensor) (*Recorded, error) {
	return RecordTail(g, nil, args...)
}

// RecordTail is Record whose recording also holds tail's work after the
// graph's (tail.Record queues it while the device records), its Run
// calling the tail's function before each replay and returning only the
// first tail.Keep results. A nil tail is Record's.
func RecordTail(g *Graph, tail *Tail, args ...*tensor.Tensor) (*Recorded, error) {
	if g == nil {
		return nil, errors.New("graph: Record: the graph is nil")
	}
	if len(args) != len(g.Inputs) {
		return nil, fmt.Errorf("graph: Record: the graph takes %d inputs, got %d", len(g.Inputs), len(args))
	}
	dev := g.device()
	capturer, ok := dev.(device.Capturer)
	if !ok {
		return nil, fmt.Errorf("%w: graph: %s does not record its work", device.ErrCapture, dev.Name())
	}
	run, lg, checks, why := recordable(g, dev)
	if why != "" {
		return nil, fmt.Errorf("%w: graph: %s", device.ErrCapture, why)
	}
	if eager.Observing() {
		return nil, fmt.Errorf("%w: graph: a tape observes the ops", device.ErrCapture)
	}
	r := &Recorded{g: g, dev: dev, specs: make([]eager.Out, len(args)), keep: len(g.Result)}
	if tail != nil {
		if tail.Keep < 0 || tail.Keep > len(g.Result) || tail.Record == nil {
			return nil, fmt.Errorf("graph: RecordTail: a tail keeping %d of %d results (Record set: %v)", tail.Keep, len(g.Result), tail.Record != nil)
		}
		r.keep, r.lend = tail.Keep, tail.Lend
	}
	for i, a := range args {
		if a == nil {
			return nil, fmt.Errorf("graph: Record: argument %d is nil", i)
		}
		if a.Device() != dev {
			return nil, fmt.Errorf("%w: graph: argument %d is on %s, the graph on %s", device.ErrCapture, i, a.Device().Name(), dev.Name())
		}
		r.specs[i] = eager.Out{DType: a.DType(), Shape: a.Shape().Clone()}
	}
	r.tail, r.run, r.lg, r.checks = tail, run, lg, checks
	if r.guesses() && tail != nil && tail.Run == nil {
		return nil, fmt.Errorf("%w: graph: RecordTail: the graph's stacks are of guessed depth (a loop without MaxIterations), and the tail has no Run for a run that outgrows them", device.ErrCapture)
	}
	if len(checks) > 0 && tail != nil && tail.Run == nil {
		return nil, fmt.Errorf("%w: graph: RecordTail: the graph checks decisions (a trace's guards), and the tail has no Run for a call whose check fails", device.ErrCapture)
	}
	if err := r.record(capturer); err != nil {
		return nil, err
	}
	return r, nil
}

// waits reports whether a run reads what the replay found before it is
// done (stacks of guessed depth, checks): the tail is then recorded on
// its own, replayed once the run is known to stand.
func (r *Recorded) waits() bool { return r.guesses() || len(r.checks) > 0 }

// record makes r's recording (and its tail's: in it, or of its own where
// a run waits for the replay's findings).
func (r *Recorded) record(capturer device.Capturer) error {
	var (
		in, out, checkOut []*tensor.Tensor
		before            func() error
		waits             = r.waits()
	)
	drop := func(recs ...device.Recording) {
		for _, t := range slices.Concat(in, out, checkOut) {
			if t != nil {
				t.Release()
			}
		}
		for _, rec := range recs {
			rec.Release()
		}
	}
	rec, err := capturer.Capture(func() error {
		err := tensor.Catch(func() {
			in = make([]*tensor.Tensor, len(r.specs))
			for i, s := range r.specs {
				t, err := tensor.Empty(r.dev, s.DType, s.Shape)
				if err != nil {
					panic(err)
				}
				in[i] = t
			}
			out = r.run(in)
			out, checkOut = out[:len(r.g.Result)], out[len(r.g.Result):]
		})
		if err == nil && r.tail != nil && !waits {
			before, err = r.tail.Record(out)
		}
		return err
	})
	if err != nil {
		return err
	}
	for i, owned := range Owned(r.g, in, out) {
		if !owned {
			drop(rec)
			return fmt.Errorf("%w: graph: result %d is not an op's output of its own", device.ErrCapture, i)
		}
	}
	var tailRec device.Recording
	if r.tail != nil && waits {
		tailRec, err = capturer.Capture(func() (err error) {
			before, err = r.tail.Record(out)
			return err
		})
		if err != nil {
			drop(rec)
			return err
		}
	}
	r.rec, r.tailRec, r.in, r.out, r.checkOut, r.before = rec, tailRec, in, out, checkOut, before
	if r.guesses() {
		r.over, r.guessed = r.lg.over, r.lg.guessedStacks()
	}
	return nil
}

// recordable returns how a recording runs g on dev's arguments, or says
// why g cannot be recorded: a straight-line graph by its plan (its
// checks on the device, where it has some: record_checks.go), a graph of
// loops (record_loops.go) on a device that records them.
func recordable(g *Graph, dev device.Device) (run func([]*tensor.Tensor) []*tensor.Tensor, lg *loopGraph, checks []Check, why string) {
	if g.StraightLine() {
		for _, n := range g.Nodes {
			if n.Kind == OpNode && n.Op.Ordered {
				return nil, nil, nil, fmt.Sprintf("%v (%s) is an ordered op", n, n.Op.Name)
			}
		}
		for i, res := range g.Result {
			if res.Node.Kind != OpNode {
				return nil, nil, nil, fmt.Sprintf("result %d is a %s", i, res.Node.Kind)
			}
		}
		if !g.hasChecks() {
			return g.plan().run, nil, nil, ""
		}
		h, checks := deviceChecks(g)
		return h.plan().run, nil, checks, ""
	}
	if g.hasChecks() {
		// A replay runs every node whatever a check finds: a loop that a
		// decision gone another way would never have reached might not end.
		return nil, nil, nil, "the graph checks decisions its trace took (guards) and has control flow: only a straight-line graph's checks are recorded (a replay whose check failed would run its loops on values the function never gives them)"
	}
	loops, ok := dev.(device.LoopCapturer)
	if !ok {
		return nil, nil, nil, "the graph has control flow, and " + dev.Name() + " does not record loops"
	}
	lg, why = lowerLoops(g)
	if why != "" {
		return nil, nil, nil, "the graph's control flow: " + why
	}
	if _, ok := dev.(device.PositionCopier); len(lg.stacks) > 0 && !ok {
		return nil, nil, nil, "the graph's loop gradients keep stacks, which " + dev.Name() + " does not keep on the device"
	}
	if _, ok := dev.(device.LimitCounter); lg.guesses() && !ok {
		return nil, nil, nil, "a loop gradient's stack is of a depth not known (give the While MaxIterations), which " + dev.Name() + " cannot check on the device"
	}
	for i, res := range g.Result {
		if k := res.Node.Kind; k != OpNode && k != Exit && (k != Merge || res.Node.Cond == 0) {
			return nil, nil, nil, fmt.Sprintf("result %d is a %s", i, k)
		}
	}
	return func(args []*tensor.Tensor) []*tensor.Tensor { return lg.run(loops, args) }, lg, nil, ""
}

// Run replays the recording on args (the dtypes and shapes it was
// recorded for, on its device, in any layout) and returns fresh results.
// It returns an error, having queued nothing, when args do not match, and
// the device's error where a copy or the replay fails.
func (r *Recorded) Run(args ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(args) != len(r.specs) {
		return nil, fmt.Errorf("graph: Recorded.Run: recorded with %d arguments, got %d", len(r.specs), len(args))
	}
	for i, a := range args {
		switch {
		case a == nil:
			return nil, fmt.Errorf("graph: Recorded.Run: argument %d is nil", i)
		case a.DType() != r.specs[i].DType || !a.Shape().Equal(r.specs[i].Shape):
			return nil, fmt.Errorf("graph: Recorded.Run: argument %d is %v%v, recorded for %v%v", i, a.DType(), a.Shape(), r.specs[i].DType, r.specs[i].Shape)
		case a.Device() != r.dev:
			return nil, fmt.Errorf("graph: Recorded.Run: argument %d is on %s, recorded on %s", i, a.Device().Name(), r.dev.Name())
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("graph: Recorded.Run: the recording was released")
	}
	r.releaseLent()
	if r.rec == nil && r.unrecorded == nil && !eager.Observing() && !eager.Profiling() {
		// A run outgrew the last recording's stacks (record_grow.go).
		r.recordAgain()
	}
	if r.rec == nil {
		return r.runOpByOp(args)
	}
	for i, a := range args {
		if err := copyTensor(r.in[i], a); err != nil {
			return nil, fmt.Errorf("graph: Recorded.Run: argument %d: %w", i, err)
		}
	}
	if r.tailRec == nil {
		if err := r.runBefore(); err != nil {
			return nil, err
		}
	}
	if err := r.rec.Replay(); err != nil {
		return nil, fmt.Errorf("graph: Recorded.Run: %w", err)
	}
	if len(r.checks) > 0 {
		if err := r.checkDecisions(); err != nil {
			return nil, fmt.Errorf("graph: Recorded.Run: %w", err)
		}
	}
	if r.over != nil {
		kept, err := r.checkStacks()
		if err != nil {
			return nil, fmt.Errorf("graph: Recorded.Run: %w", err)
		}
		if !kept {
			return r.runOpByOp(args)
		}
	}
	if r.tailRec != nil {
		if err := r.runBefore(); err != nil {
			return nil, err
		}
		if err := r.tailRec.Replay(); err != nil {
			return nil, fmt.Errorf("graph: Recorded.Run: the tail: %w", err)
		}
	}
	if r.lend {
		return slices.Clone(r.out[:r.keep]), nil
	}
	out := make([]*tensor.Tensor, r.keep)
	for i, res := range r.out[:r.keep] {
		t, err := copyOf(res)
		if err != nil {
			for _, o := range out[:i] {
				o.Release()
			}
			return nil, fmt.Errorf("graph: Recorded.Run: result %d: %w", i, err)
		}
		out[i] = t
	}
	return out, nil
}

// runBefore runs the tail's work before its replay (if any).
func (r *Recorded) runBefore() error {
	if r.before == nil {
		return nil
	}
	if err := r.before(); err != nil {
		return fmt.Errorf("graph: Recorded.Run: the tail: %w", err)
	}
	return nil
}

// copyOf returns a fresh row-major copy of t on its device.
func copyOf(t *tensor.Tensor) (*tensor.Tensor, error) {
	c, err := tensor.Empty(t.Device(), t.DType(), t.Shape())
	if err != nil {
		return nil, err
	}
	if err := copyTensor(c, t); err != nil {
		c.Release()
		return nil, err
	}
	return c, nil
}

// copyTensor queues a copy of src's elements into dst, a row-major tensor
// of the same dtype and shape on the same device.
func copyTensor(dst, src *tensor.Tensor) error {
	shape := src.Shape()
	return dst.Device().Copy(dst.Buffer(), 0, tensor.Strides(shape, nil), src.Buffer(), 0, tensor.Strides(shape, src.Layout()), shape, src.DType().Size())
}

// Release frees the recording and its memory once the work queued
// before is done; Run fails afterwards. Releasing twice does nothing.
func (r *Recorded) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	r.releaseLent()
	r.dropRecording()
}

// dropRecording frees r's recordings and their memory (a later run
// records again, or runs op by op).
func (r *Recorded) dropRecording() {
	for _, t := range slices.Concat(r.in, r.out, r.checkOut) {
		if t != nil {
			t.Release()
		}
	}
	for _, rec := range []device.Recording{r.rec, r.tailRec} {
		if rec != nil {
			rec.Release()
		}
	}
	r.in, r.out, r.checkOut, r.rec, r.tailRec, r.before, r.over, r.guessed = nil, nil, nil, nil, nil, nil, nil, nil
}
