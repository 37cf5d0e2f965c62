package graph

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// A recording whose loop gradients keep stacks of guessed depth (a loop
// a tape records without MaxIterations: record_stacks.go). Its stacks
// hold the depth the trace saw, and every run checks that they held
// enough: after the replay, Run reads the recording's overflow flag (a
// wait for the device, where a recording of bounded stacks waits for
// nothing). Where the flag is clear, the results are the graph's, and
// the tail (an optimizer's update), recorded on its own, is replayed
// then, so that a run whose stacks overflowed updates nothing. Where it
// is set, the stacks' peaks give their new capacities (the peak, and at
// least twice the old one, so that a growing trip count records a few
// times at most), the recording is dropped, the call runs op by op
// (Execute and Tail.Run) and the next run records anew.
// EAGERFLOW_DEBUG=record prints each such growth to standard error.

// guesses reports whether r's graph keeps stacks of guessed depth.
func (r *Recorded) guesses() bool { return r.lg != nil && r.lg.guesses() }

// guesses reports whether a stack of lg's is of guessed depth.
func (lg *loopGraph) guesses() bool {
	for n := range lg.stacks {
		if guessed(n) {
			return true
		}
	}
	return false
}

// checkStacks reads the overflow flag of the run just replayed (a wait)
// and reports whether every stack kept its values; where one did not, it
// grows the capacities the next recording gives them and drops this one.
func (r *Recorded) checkStacks() (kept bool, err error) {
	var over bool
	peaks := make([]int64, len(r.guessed))
	if err := tensor.Catch(func() {
		if over = r.over.Item().(bool); over {
			for i, s := range r.guessed {
				peaks[i] = s.peak.Item().(int64)
			}
		}
	}); err != nil {
		return false, fmt.Errorf("reading the stacks' overflow flag: %w", err)
	}
	if !over {
		return true, nil
	}
	if r.lg.depths == nil {
		r.lg.depths = map[*Node]int{}
	}
	for i, s := range r.guessed {
		if c := s.buf.Dim(0); int(peaks[i]) > c {
			r.lg.depths[s.node] = max(int(peaks[i]), 2*c)
			debugRecord("%v went %d deep, past the recording's %d: the run goes op by op, the next records room for %d",
				s.node, peaks[i], c, r.lg.depths[s.node])
		}
	}
	r.dropRecording()
	return false, nil
}

// recordAgain makes the recording a run outgrew again, or keeps why it
// could not (Err: the runs go op by op), unless a tape or a profile
// began meanwhile (a later run tries again).
func (r *Recorded) recordAgain() {
	err := r.record(r.dev.(device.Capturer))
	if err == nil || eager.Observing() || eager.Profiling() {
		return
	}
	r.unrecorded = err
	debugRecord("the graph could not be recorded again, and runs op by op: %v", err)
}

// debugRecord prints a note to standard error where EAGERFLOW_DEBUG
// names record.
func debugRecord(format string, args ...any) {
	if strings.Contains(os.Getenv("EAGERFLOW_DEBUG"), "record") {
		fmt.Fprintf(os.Stderr, "graph: Recorded.Run: "+format+"\n", args...)
	}
}

// runOpByOp runs the graph on args with Execute and the tail's Run on its
// results, and returns the first r.keep, each the run's own; lent ones
// (Tail.Lend) are released by the next run.
func (r *Recorded) runOpByOp(args []*tensor.Tensor) ([]*tensor.Tensor, error) {
	out, err := Execute(r.g, args...)
	if err != nil {
		return nil, fmt.Errorf("graph: Recorded.Run: %w", err)
	}
	owned := Owned(r.g, args, out)
	release := func() {
		for i, t := range out {
			if owned[i] {
				t.Release()
			}
		}
	}
	for i := range out[:r.keep] {
		if owned[i] {
			continue
		}
		// An argument or a constant: the caller may release the result.
		if out[i], err = copyOf(out[i]); err != nil {
			out[i], owned[i] = nil, false
			release()
			return nil, fmt.Errorf("graph: Recorded.Run: result %d: %w", i, err)
		}
		owned[i] = true
	}
	if r.tail != nil {
		if err := r.tail.Run(out); err != nil {
			release()
			return nil, fmt.Errorf("graph: Recorded.Run: the tail: %w", err)
		}
	}
	for i := r.keep; i < len(out); i++ {
		if owned[i] {
			out[i].Release()
		}
	}
	out = out[:r.keep]
	if r.lend {
		r.lent = slices.Clone(out)
	}
	return out, nil
}

// Err returns why r runs its graph op by op now (a run outgrew its
// stacks and the recording could not be made again), or nil.
func (r *Recorded) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unrecorded
}

// releaseLent releases the results a run op by op lent.
func (r *Recorded) releaseLent() {
	for _, t := range r.lent {
		t.Release()
	}
	r.lent = nil
}
