package collective_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

type T = *tensor.Tensor

// pair is the rendezvous of two in-process ranks.
func pair(t *testing.T) [2]*collective.Rendezvous {
	t.Helper()
	var out [2]*collective.Rendezvous
	for i, tr := range collective.Loopback(2) {
		r, err := collective.NewRendezvous(tr)
		if err != nil {
			t.Fatal(err)
		}
		r.SetTimeout(20 * time.Second) // a lost value fails the test instead of hanging it
		t.Cleanup(func() { r.Close() })
		out[i] = r
	}
	return out
}

func must(t T, err error) T {
	if err != nil {
		panic(err)
	}
	return t
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}

// ranks runs fn for ranks 0 and 1 at once and waits for both.
func ranks(fn func(r int)) {
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() { fn(r) })
	}
	wg.Wait()
}

// Eagerly, Send posts and Recv waits for the value, on like's device;
// a receive of the wrong shape, a bad name and a dead value are errors.
func TestSendRecvEagerly(t *testing.T) {
	rs := pair(t)
	x := tensor.FromSlice([]float32{1, 2, 3}, 3)
	if err := rs[0].Send(x, 1, "x"); err != nil {
		t.Fatal(err)
	}
	y, err := rs[1].Recv(tensor.Zeros(tensor.Float32, 3), 0, "x")
	if err != nil || !slices.Equal(tensor.ToSlice[float32](y), []float32{1, 2, 3}) {
		t.Fatalf("%v %v", y, err)
	}
	check(rs[0].Send(x, 1, "x"))
	if _, err := rs[1].Recv(tensor.Zeros(tensor.Float32, 4), 0, "x"); !errors.Is(err, collective.ErrCollective) {
		t.Errorf("a receive of another shape: %v", err)
	}
	for _, name := range []string{"", "a#b"} {
		if err := rs[0].Send(x, 1, name); !errors.Is(err, collective.ErrCollective) {
			t.Errorf("Send named %q: %v", name, err)
		}
	}
	check(rs[0].Post(1, "dead#", nil, true))
	if _, err := rs[1].Recv(x, 0, "dead"); !errors.Is(err, collective.ErrCollective) {
		t.Errorf("an eager receive of a dead value: %v", err)
	}
}

// Two ranks, each with its own traced function: a pipeline (rank 0
// computes and sends, rank 1 receives and finishes), values exchanged
// both ways, and a loop that sends at every iteration; each graph run
// moves that call's values.
func TestTracedSendRecvAcrossRanks(t *testing.T) {
	rs := pair(t)
	fns := [2]*trace.Function{
		trace.NewFunction(func(a []T) []T {
			h := ops.Tanh(ops.Mul(a[0], tensor.Scalar(float32(2))))
			check(rs[0].Send(h, 1, "h"))
			// Exchange: each rank sends to the other, then receives.
			check(rs[0].Send(ops.Sum(a[0]), 1, "sum"))
			other := must(rs[0].Recv(ops.Sum(a[0]), 1, "sum"))
			// A loop that sends its running sum at every iteration.
			loop := control.While(func(v []T) T { return ops.Lt(v[0], tensor.Scalar(int32(4))) },
				func(v []T) []T {
					s := ops.Add(v[1], ops.Cast(v[0], tensor.Float32))
					check(rs[0].Send(s, 1, "running"))
					return []T{ops.Add(v[0], tensor.Scalar(int32(1))), s}
				}, []T{tensor.Scalar(int32(0)), ops.Sum(a[0])}, control.WhileOptions{ParallelIterations: 4})
			return []T{h, other, loop[1]}
		}),
		trace.NewFunction(func(a []T) []T {
			h := must(rs[1].Recv(a[0], 0, "h"))
			check(rs[1].Send(ops.Sum(a[0]), 0, "sum"))
			other := must(rs[1].Recv(ops.Sum(a[0]), 0, "sum"))
			// The mirror loop: one receive per iteration, summed.
			loop := control.While(func(v []T) T { return ops.Lt(v[0], tensor.Scalar(int32(4))) },
				func(v []T) []T {
					got := must(rs[1].Recv(v[1], 0, "running"))
					return []T{ops.Add(v[0], tensor.Scalar(int32(1))), ops.Add(v[1], got)}
				}, []T{tensor.Scalar(int32(0)), ops.Sub(ops.Sum(a[0]), ops.Sum(a[0]))}, control.WhileOptions{ParallelIterations: 4})
			return []T{ops.Add(h, tensor.Scalar(float32(1))), other, loop[1]}
		}),
	}
	for call, in := range [][2][]float32{{{1, 2}, {5, 5}}, {{-1, 0.5}, {1, 1}}, {{3, 3}, {0, 2}}} {
		var outs [2][]T
		ranks(func(r int) {
			out, err := fns[r].Call(tensor.FromSlice(in[r]))
			if err != nil {
				t.Errorf("call %d, rank %d: %v", call, r, err)
			}
			outs[r] = out
		})
		if t.Failed() {
			return
		}
		h := tensor.ToSlice[float32](outs[0][0])
		got1 := tensor.ToSlice[float32](outs[1][0])
		for i := range h {
			if got1[i] != h[i]+1 {
				t.Errorf("call %d: rank 1 finished %v, rank 0 computed %v", call, got1, h)
			}
		}
		s0, s1 := in[0][0]+in[0][1], in[1][0]+in[1][1]
		if outs[0][1].Float() != float64(s1) || outs[1][1].Float() != float64(s0) {
			t.Errorf("call %d: exchanged %v and %v, want %v and %v", call, outs[0][1], outs[1][1], s1, s0)
		}
		// Rank 0's running sums s0, s0+0, s0+0+1, ... sent at each
		// iteration: s0, s0+1, s0+3, s0+6; rank 1 sums them.
		want := 4*float64(s0) + 10
		if outs[1][2].Float() != want || outs[0][2].Float() != float64(s0)+6 {
			t.Errorf("call %d: loop results %v (rank 0) and %v (rank 1), want %v and %v", call, outs[0][2], outs[1][2], float64(s0)+6, want)
		}
	}
	for r, f := range fns {
		if f.Traces() != 1 {
			t.Errorf("rank %d: %d traces", r, f.Traces())
		}
	}
}

// A send on a branch not taken posts a dead flag: the receiving rank's
// mirror branch (its Recv in the same branch) takes it, whichever branch
// the predicate picks on each call.
func TestTracedSendOnBranchNotTaken(t *testing.T) {
	rs := pair(t)
	branchy := func(r int) *trace.Function {
		return trace.NewFunction(func(a []T) []T {
			pred := ops.Gt(ops.Sum(a[0]), tensor.Scalar(float32(0)))
			out := control.Cond(pred, func() []T {
				if r == 0 {
					check(rs[0].Send(ops.Mul(a[0], a[0]), 1, "sq"))
					return []T{a[0]}
				}
				return []T{must(rs[1].Recv(a[0], 0, "sq"))}
			}, func() []T {
				return []T{ops.Neg(a[0])}
			})
			return out
		})
	}
	fns := [2]*trace.Function{branchy(0), branchy(1)}
	for call, in := range [][]float32{{1, 2}, {-1, -2}, {3, -1}, {-4, 1}} {
		var outs [2]T
		ranks(func(r int) {
			out, err := fns[r].Call(tensor.FromSlice(in))
			if err != nil {
				t.Errorf("call %d, rank %d: %v", call, r, err)
				return
			}
			outs[r] = out[0]
		})
		if t.Failed() {
			return
		}
		want := []float32{-in[0], -in[1]}
		if in[0]+in[1] > 0 {
			want = []float32{in[0] * in[0], in[1] * in[1]}
		}
		if got := tensor.ToSlice[float32](outs[1]); !slices.Equal(got, want) {
			t.Errorf("call %d (%v): rank 1 got %v, want %v", call, in, got, want)
		}
	}
}

// A receive whose like is a captured tensor is not recorded (no op on
// captured tensors alone is): the trace fails, naming it, where it would
// have held the tracing call's value for good.
func TestRecvOnCapturedValueFailsTheTrace(t *testing.T) {
	rs := pair(t)
	check(rs[0].Send(tensor.Scalar(float32(3)), 1, "v"))
	f := trace.NewFunction(func(a []T) []T {
		got := must(rs[1].Recv(tensor.Scalar(float32(0)), 0, "v")) // like: a constant
		return []T{ops.Add(a[0], got)}
	})
	_, err := f.Call(tensor.Scalar(float32(1)))
	if err == nil || !strings.Contains(err.Error(), "Recv") || !strings.Contains(err.Error(), "not values of the trace") {
		t.Fatalf("%v, want the trace to fail naming Recv", err)
	}
}
