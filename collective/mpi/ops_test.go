//go:build linux || darwin

package mpi

import (
	"fmt"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/internal/mpitest"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The collectives as ops across 2 and 3 ranks: gradients against central
// differences of the whole job's loss, ties of Max, and traced functions
// whose independent collectives (beside the CPU workers' concurrent ops,
// across a loop's parallel iterations) give what the eager calls give.
func TestCollectiveOpsUnderMPIRun(t *testing.T) {
	for _, np := range []int{2, 3} {
		t.Run(fmt.Sprint(np), func(t *testing.T) { mpitest.Run(t, np, "TestRankCollectiveOps") })
	}
}

type T = *tensor.Tensor

func must(t T, err error) T {
	if err != nil {
		panic(err)
	}
	return t
}

func TestRankCollectiveOps(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestCollectiveOpsUnderMPIRun's mpirun")
	}
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Run("gradients", func(t *testing.T) { rankGradients(t, c) })
	t.Run("ties", func(t *testing.T) { rankTies(t, c) })
	t.Run("traced", func(t *testing.T) { rankTraced(t, c) })
	t.Run("halves", func(t *testing.T) { rankHalves(t, c) })
}

// rankHalves: bfloat16 and float16 tensors all-reduce, gather and scatter
// across the ranks (as float32, rounded once): rank r holds r+1 and r+1.5,
// whose sums every half type holds exactly.
func rankHalves(t *testing.T, c *Comm) {
	r, n := c.Rank(), c.Size()
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		x := ops.Cast(tensor.FromSlice([]float32{float32(r + 1), float32(r) + 1.5}, 2), dt)
		sum := must(c.AllReduce(x, collective.Sum))
		want := []float32{float32(n * (n + 1) / 2), float32(n*(n-1)/2) + 1.5*float32(n)}
		if got := tensor.ToSlice[float32](ops.Cast(sum, tensor.Float32)); sum.DType() != dt || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%v AllReduce on rank %d: %v, want %v", dt, r, sum, want)
		}
		all := must(c.AllGather(x))
		if got := tensor.ToSlice[float32](ops.Cast(all, tensor.Float32)); all.DType() != dt || len(got) != 2*n || got[2*(n-1)] != float32(n) {
			t.Errorf("%v AllGather on rank %d: %v", dt, r, all)
		}
	}
}

// rankGradients checks each collective's gradient on this rank against
// central differences of the job's loss, Σ over ranks of w_r · f(x_r):
// the tape on rank r gives d(loss)/d(x_r), since every rank's backward
// pass runs the gradient's collectives.
func rankGradients(t *testing.T, c *Comm) {
	r, n := c.Rank(), c.Size()
	cases := []struct {
		name string
		f    func(x T) T
	}{
		{"AllReduce sum", func(x T) T { return must(c.AllReduce(x, collective.Sum)) }},
		{"AllReduce mean", func(x T) T { return must(c.AllReduce(x, collective.Mean)) }},
		{"AllReduce max", func(x T) T { return must(c.AllReduce(x, collective.Max)) }},
		{"AllReduce min", func(x T) T { return must(c.AllReduce(x, collective.Min)) }},
		{"Broadcast from 1", func(x T) T { return must(c.Broadcast(x, 1)) }},
		{"AllGather", func(x T) T { return must(c.AllGather(x)) }},
		{"ReduceScatter sum", func(x T) T { return must(c.ReduceScatter(x, collective.Sum)) }},
		{"ReduceScatter mean", func(x T) T { return must(c.ReduceScatter(x, collective.Mean)) }},
		{"ReduceScatter max", func(x T) T { return must(c.ReduceScatter(x, collective.Max)) }},
		// A chain: the gradient of a gradient's collective.
		{"AllGather of AllReduce", func(x T) T {
			return must(c.AllGather(ops.Tanh(must(c.AllReduce(ops.Mul(x, x), collective.Mean)))))
		}},
	}
	for k, tc := range cases {
		x := tensor.RandUniform(tensor.NewRNG(uint64(100*k+r)), tensor.Float64, -1, 1, n, 2)
		var w T
		loss := func(x T) T {
			y := tc.f(x)
			if w == nil {
				w = tensor.RandUniform(tensor.NewRNG(uint64(1000+100*k+r)), tensor.Float64, 0.5, 1.5, y.Shape()...)
			}
			return ops.Sum(ops.Mul(y, w))
		}
		tp := tape.New()
		tp.Watch(x)
		g := tp.Gradient(loss(x), x)[0]
		if g == nil {
			t.Fatalf("%s: no gradient", tc.name)
		}
		analytic := tensor.ToSlice[float64](g)
		// Central differences, one element of one rank's x at a time; every
		// rank evaluates the job's loss at each point.
		const h = 1e-6
		base := tensor.ToSlice[float64](x)
		for p := range n {
			for i := range base {
				var at [2]float64
				for s, sign := range []float64{1, -1} {
					v := append([]float64(nil), base...)
					if r == p {
						v[i] += sign * h
					}
					at[s] = must(c.AllReduce(loss(tensor.FromSlice(v, x.Shape()...)), collective.Sum)).Item().(float64)
				}
				numeric := (at[0] - at[1]) / (2 * h)
				if r == p && math.Abs(numeric-analytic[i]) > 1e-6*math.Max(1, math.Abs(numeric)) {
					t.Errorf("%s: rank %d, element %d: gradient %v, central difference %v", tc.name, r, i, analytic[i], numeric)
				}
			}
		}
	}
}

// rankTies: where ranks tie for the maximum, they share its gradient.
func rankTies(t *testing.T, c *Comm) {
	n := c.Size()
	x := tensor.FromSlice([]float64{2, float64(c.Rank())}) // all tie at 2; rank n-1 alone holds n-1
	tp := tape.New()
	tp.Watch(x)
	y := must(c.AllReduce(x, collective.Max))
	g := tensor.ToSlice[float64](tp.Gradient(ops.Sum(y), x)[0])
	wantLast := 0.0
	if c.Rank() == n-1 {
		wantLast = float64(n)
	}
	if math.Abs(g[0]-1) > 1e-12 || g[1] != wantLast {
		t.Errorf("rank %d: gradient of a max with ties %v, want [1 %v]", c.Rank(), g, wantLast)
	}
}

// rankTraced runs a function with many collectives that could run in any
// order (independent of each other, in a loop whose iterations may
// overlap, heavy ops beside them on the CPU workers) eagerly and traced,
// four calls each: the graph must run them in the same order on every
// rank, or the sums mix values.
func rankTraced(t *testing.T, c *Comm) {
	r := c.Rank()
	fn := func(a []T) []T {
		x, w := a[0], a[1]
		tp := tape.New()
		tp.Watch(w)
		h := ops.Tanh(ops.MatMul(x, w)) // [128 128]: heavy, runs on a worker
		var outs []T
		for k := range 8 { // eight same-shaped, independent all-reduces
			outs = append(outs, must(c.AllReduce(ops.Mul(h, tensor.Scalar(float64(k+1))), collective.Sum)))
		}
		loop := control.While(func(v []T) T { return ops.Lt(v[0], tensor.Scalar(int32(5))) },
			func(v []T) []T {
				// Each iteration's collective reads the counter only.
				s := must(c.AllReduce(ops.Mul(ops.Cast(v[0], tensor.Float64), ops.Sum(x)), collective.Max))
				return []T{ops.Add(v[0], tensor.Scalar(int32(1))), ops.Add(v[1], s)}
			}, []T{tensor.Scalar(int32(0)), tensor.Scalar(0.0)}, control.WhileOptions{ParallelIterations: 5})
		loss := ops.Sum(must(c.AllGather(ops.Sum(ops.Mul(outs[1], outs[2])))))
		g := tp.Gradient(loss, w)[0]
		return append(outs, loop[1], must(c.ReduceScatter(g, collective.Mean)))
	}
	f := trace.NewFunction(fn)
	for call := range 4 {
		rng := tensor.NewRNG(uint64(10*call + r))
		args := []T{tensor.RandUniform(rng, tensor.Float64, -1, 1, 128, 96), tensor.RandUniform(rng, tensor.Float64, -0.2, 0.2, 96, 128)}
		want := fn(args)
		got, err := f.Call(args...)
		if err != nil {
			t.Fatalf("call %d: %v", call, err)
		}
		for i := range want {
			wv, gv := tensor.ToSlice[float64](want[i]), tensor.ToSlice[float64](got[i])
			for j := range wv {
				if math.Abs(wv[j]-gv[j]) > 1e-9*math.Max(1, math.Abs(wv[j])) {
					t.Fatalf("rank %d, call %d, result %d, element %d: traced %v, eager %v", r, call, i, j, gv[j], wv[j])
				}
			}
		}
	}
	if f.Traces() != 1 {
		t.Errorf("%d traces", f.Traces())
	}
}
