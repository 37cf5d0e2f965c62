package trace

import (
	"io"

	"github.com/eagerflow/eagerflow/tensor"
)

// TraceUnrolled traces fn on args with its loops unrolled and at most
// maxNodes nodes (0: no bound), as a Function with Record does first on
// a device that records, and returns the trace's error.
func TraceUnrolled(fn func([]*tensor.Tensor) []*tensor.Tensor, args []*tensor.Tensor, maxNodes int) (straight, guarded bool, err error) {
	_, tr, err := traceCall(fn, args, true, maxNodes)
	if err != nil {
		return false, false, err
	}
	return tr.g.StraightLine(), tr.hasGuards, nil
}

// GraphRuns is how many times f ran the graph of the signature of args
// that has guards (runGuarded).
func (f *Function) GraphRuns(args ...*tensor.Tensor) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if tr := f.graphs[signature(args)]; tr != nil {
		return tr.graphRuns.Load()
	}
	return -1
}

// SetDebugOut sends EAGERFLOW_DEBUG's notes to w until the returned
// function restores them.
func SetDebugOut(w io.Writer) (restore func()) {
	prev := debugOut
	debugOut = w
	return func() { debugOut = prev }
}

// ErrTooLong is errTooLong.
var ErrTooLong = errTooLong
