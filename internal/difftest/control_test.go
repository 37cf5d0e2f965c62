package difftest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/ranktest"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The control-flow programs: the same templates as torch_eval.py's
// TEMPLATES, each a loss of its inputs written with control (eagerflow)
// and with Python's own loops and ifs (PyTorch).

type template struct {
	name string
	loss func(in []T) T
	// shapes returns random input shapes; batch varies the leading size,
	// so that a second batch size retraces.
	shapes func(r *rand.Rand, batch int) [][]int
	lo, hi float64 // input range
	// count, when positive, makes the last input an int64 scalar in
	// [0, count]: a trip count the traced function reads as an argument.
	count int
}

func scalar(x T, v float64) T { return ops.ScalarLike(x, v) }

// batchVectorScalar is a template's shapes: a batch of rows of d, a
// vector of d and a scalar, d drawn from [least, least+spread).
func batchVectorScalar(least, spread int) func(r *rand.Rand, batch int) [][]int {
	return func(r *rand.Rand, b int) [][]int {
		d := least + r.IntN(spread)
		return [][]int{{b, d}, {d}, {}}
	}
}

var templates = []template{
	{"while_grow", func(in []T) T {
		x, w, thr := in[0], in[1], in[2]
		out := control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Square(v[0])), thr) },
			func(v []T) []T {
				return []T{ops.Add(ops.Mul(ops.Tanh(ops.MatMul(v[0], w)), scalar(w, 1.5)), v[0])}
			}, []T{x}, control.WhileOptions{MaxIterations: 20})
		return ops.Sum(out[0])
	}, func(r *rand.Rand, b int) [][]int {
		d := 2 + r.IntN(3)
		return [][]int{{b, d}, {d, d}, {}}
	}, 0.1, 1, 0},
	{"scan_rnn", func(in []T) T {
		xs, w, u, bias := in[0], in[1], in[2], in[3]
		h0 := tensor.Zeros(tensor.Float64, xs.Dim(1), w.Dim(0))
		carry, ys := control.Scan(func(c, x []T) ([]T, []T) {
			h := ops.Tanh(ops.Add(ops.Add(ops.MatMul(c[0], w), ops.MatMul(x[0], u)), bias))
			return []T{h}, []T{h}
		}, []T{h0}, []T{xs})
		return ops.Add(ops.Sum(ops.Square(carry[0])), ops.Mean(ys[0]))
	}, func(r *rand.Rand, b int) [][]int {
		steps, i, h := 2+r.IntN(4), 1+r.IntN(3), 2+r.IntN(3)
		return [][]int{{steps, b, i}, {h, h}, {i, h}, {h}}
	}, -0.8, 0.8, 0},
	{"cond_in_loop", func(in []T) T {
		x, a, b := in[0], in[1], in[2]
		out := control.Fori(0, 4, func(_ T, v []T) []T {
			h := v[0]
			return control.Cond(ops.Gt(ops.Sum(h), scalar(h, 0)),
				func() []T { return []T{ops.Mul(ops.Sin(h), a)} },
				func() []T { return []T{ops.Sub(ops.Mul(h, h), b)} })
		}, []T{x})
		return ops.Sum(out[0])
	}, func(r *rand.Rand, b int) [][]int {
		d := 1 + r.IntN(4)
		return [][]int{{b, d}, {d}, {b, d}}
	}, -1.5, 1.5, 0},
	{"nested", func(in []T) T {
		x, w, thr := in[0], in[1], in[2]
		out := control.Fori(0, 3, func(_ T, v []T) []T {
			h := control.While(func(u []T) T { return ops.Lt(ops.Sum(ops.Square(u[0])), thr) },
				func(u []T) []T { return []T{ops.Add(ops.Mul(u[0], w), scalar(w, 0.25))} },
				[]T{v[0]}, control.WhileOptions{MaxIterations: 6})
			return []T{ops.Tanh(h[0])}
		}, []T{x})
		return ops.Sum(ops.Square(out[0]))
	}, batchVectorScalar(1, 3), 0.2, 1.5, 0},
	{"trips_on_x", func(in []T) T {
		x, w := in[0], in[1]
		limit := ops.Add(ops.Mul(ops.Abs(ops.Sum(x)), scalar(x, 6)), scalar(x, 1))
		out := control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Abs(v[0])), limit) },
			func(v []T) []T { return []T{ops.Add(ops.Mul(v[0], scalar(w, 1.5)), ops.Square(w))} },
			[]T{x}, control.WhileOptions{MaxIterations: 30})
		return ops.Sum(ops.Sin(out[0]))
	}, func(r *rand.Rand, b int) [][]int {
		d := 1 + r.IntN(3)
		return [][]int{{b, d}, {b, d}}
	}, -1, 1, 0},
	// A loop whose values no tape watches (x is cut off) but whose body
	// reads the weight w and branches on it: a training step's loop with
	// a Cond, whose gradient the trace finds only inside the Cond.
	{"cond_while_weight", func(in []T) T {
		w, x, thr := in[0], in[1], in[2]
		out := control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Square(v[0])), thr) },
			func(v []T) []T {
				h := ops.MatMul(v[0], w)
				y := control.Cond(ops.Gt(ops.Sum(h), scalar(h, 0)),
					func() []T { return []T{ops.Mul(ops.Sin(h), scalar(h, 2))} },
					func() []T { return []T{ops.Sub(ops.Mul(h, h), v[0])} })
				return []T{ops.Add(y[0], v[0])}
			}, []T{ops.StopGradient(x)}, control.WhileOptions{MaxIterations: 6})
		// (w's gradient is zeros, not missing, where no iteration ran.)
		return ops.Add(ops.Sum(ops.Square(out[0])), ops.Mul(scalar(w, 0), ops.Sum(w)))
	}, func(r *rand.Rand, b int) [][]int {
		d := 1 + r.IntN(3)
		return [][]int{{d, d}, {b, d}, {}}
	}, -0.8, 0.8, 0},
	// A loop inside one branch of a Cond, the other branch straight: the
	// loop's frame (and its gradient's) in an IF node on the GPU.
	{"loop_in_cond", func(in []T) T {
		x, w, thr := in[0], in[1], in[2]
		y := control.Cond(ops.Gt(ops.Sum(x), scalar(x, 0)),
			func() []T {
				return control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Abs(v[0])), thr) },
					func(v []T) []T { return []T{ops.Add(ops.Mul(v[0], w), scalar(w, 0.5))} },
					[]T{x}, control.WhileOptions{MaxIterations: 8})
			},
			func() []T { return []T{ops.Mul(ops.Sin(x), w)} })
		return ops.Sum(ops.Square(y[0]))
	}, batchVectorScalar(1, 3), -1, 1.2, 0},
	// A Scan whose step branches on its state: a Cond in the frame a
	// Scan's steps bound, its gradient's stacks on the device.
	{"scan_cond", func(in []T) T {
		xs, w := in[0], in[1]
		h0 := tensor.Zeros(tensor.Float64, xs.Dim(1), w.Dim(0))
		carry, _ := control.Scan(func(c, x []T) ([]T, []T) {
			h := ops.Tanh(ops.Add(ops.MatMul(c[0], w), x[0]))
			y := control.Cond(ops.Gt(ops.Sum(h), scalar(h, 0)),
				func() []T { return []T{ops.Mul(h, scalar(h, 0.5))} },
				func() []T { return []T{ops.Add(h, scalar(h, 0.1))} })
			return []T{y[0]}, []T{y[0]}
		}, []T{h0}, []T{xs})
		return ops.Sum(ops.Square(carry[0]))
	}, func(r *rand.Rand, b int) [][]int {
		steps, d := 2+r.IntN(4), 1+r.IntN(3)
		return [][]int{{steps, b, d}, {d, d}}
	}, -0.9, 0.9, 0},
	// Conds nested in a bounded loop, each reading the weight: pushes
	// two branches deep, popped under gates of their own.
	{"cond_cond_weight", func(in []T) T {
		w, x, thr := in[0], in[1], in[2]
		out := control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Abs(v[0])), thr) },
			func(v []T) []T {
				h := ops.Mul(v[0], w)
				y := control.Cond(ops.Gt(ops.Sum(h), scalar(h, 0)),
					func() []T {
						return control.Cond(ops.Gt(ops.Amax(h), scalar(h, 0.5)),
							func() []T { return []T{ops.Add(ops.Sin(h), v[0])} },
							func() []T { return []T{ops.Add(ops.Mul(h, w), scalar(h, 0.3))} })
					},
					func() []T { return []T{ops.Sub(ops.Square(h), v[0])} })
				return []T{ops.Add(y[0], scalar(w, 0.2))}
			}, []T{ops.StopGradient(x)}, control.WhileOptions{MaxIterations: 6})
		return ops.Add(ops.Sum(ops.Square(out[0])), ops.Mul(scalar(w, 0), ops.Sum(w)))
	}, func(r *rand.Rand, b int) [][]int {
		d := 1 + r.IntN(3)
		return [][]int{{d}, {b, d}, {}}
	}, -0.8, 0.9, 0},
	// Two loop values that trade places each iteration, the weight read
	// by one of them: the recorded loop's copies staged, its gradient's
	// stacks two a step.
	{"swap_weight", func(in []T) T {
		w, x, thr := in[0], in[1], in[2]
		out := control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Abs(v[1])), thr) },
			func(v []T) []T { return []T{v[1], ops.Add(ops.Mul(ops.Tanh(v[0]), w), v[1])} },
			[]T{ops.StopGradient(x), ops.StopGradient(ops.Neg(x))}, control.WhileOptions{MaxIterations: 7})
		return ops.Add(ops.Sum(ops.Mul(out[0], out[1])), ops.Mul(scalar(w, 0), ops.Sum(w)))
	}, func(r *rand.Rand, b int) [][]int {
		d := 1 + r.IntN(3)
		return [][]int{{d}, {b, d}, {}}
	}, -0.9, 0.9, 0},
	// A bounded loop in a bounded loop, both reading the weight: the inner
	// loop's stacks hold the product of the bounds.
	{"nested_bounded", func(in []T) T {
		w, x, thr := in[0], in[1], in[2]
		out := control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Square(v[0])), ops.Mul(thr, scalar(thr, 4))) },
			func(v []T) []T {
				h := control.While(func(u []T) T { return ops.Lt(ops.Sum(ops.Abs(u[0])), thr) },
					func(u []T) []T { return []T{ops.Add(ops.Mul(u[0], w), scalar(w, 0.25))} },
					[]T{v[0]}, control.WhileOptions{MaxIterations: 3})
				return []T{ops.Add(ops.Tanh(h[0]), v[0])}
			}, []T{ops.StopGradient(x)}, control.WhileOptions{MaxIterations: 4})
		return ops.Add(ops.Sum(ops.Square(out[0])), ops.Mul(scalar(w, 0), ops.Sum(w)))
	}, func(r *rand.Rand, b int) [][]int {
		d := 1 + r.IntN(3)
		return [][]int{{d}, {b, d}, {}}
	}, 0.1, 1.2, 0},
	// A Scan inside a bounded loop, the loop's state feeding the scan and
	// its count (an Int64 value) the loss: frames of both kinds nested.
	{"scan_in_while", func(in []T) T {
		xs, w, thr := in[0], in[1], in[2]
		out := control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Square(v[0])), thr) },
			func(v []T) []T {
				carry, _ := control.Scan(func(c, x []T) ([]T, []T) {
					h := ops.Tanh(ops.Add(ops.MatMul(c[0], w), x[0]))
					return []T{h}, nil
				}, []T{v[0]}, []T{xs})
				return []T{ops.Add(carry[0], v[0]), ops.Add(v[1], ops.ScalarLike(v[1], 1))}
			}, []T{ops.Reshape(ops.Mean(xs, 0), xs.Dim(1), xs.Dim(2)), ops.ScalarLike(thr, 0)}, control.WhileOptions{MaxIterations: 4})
		return ops.Add(ops.Sum(ops.Square(out[0])), ops.Mul(out[1], scalar(thr, 0.1)))
	}, func(r *rand.Rand, b int) [][]int {
		steps, d := 2+r.IntN(3), 1+r.IntN(3)
		return [][]int{{steps, b, d}, {d, d}, {}}
	}, -0.8, 0.8, 0},
	// A loop in each branch of a Cond, of other bounds and bodies, the
	// predicate and the loops' conditions reading the weight.
	{"cond_of_loops", func(in []T) T {
		x, w, thr := in[0], in[1], in[2]
		y := control.Cond(ops.Gt(ops.Sum(ops.Mul(x, w)), scalar(x, 0)),
			func() []T {
				return control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Abs(ops.Mul(v[0], w))), thr) },
					func(v []T) []T { return []T{ops.Add(ops.Mul(v[0], scalar(v[0], 1.5)), w)} },
					[]T{x}, control.WhileOptions{MaxIterations: 5})
			},
			func() []T {
				return control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Square(v[0])), thr) },
					func(v []T) []T { return []T{ops.Sub(ops.Sin(v[0]), w)} },
					[]T{x}, control.WhileOptions{MaxIterations: 3})
			})
		return ops.Sum(ops.Mul(y[0], y[0]))
	}, batchVectorScalar(1, 3), -1, 1, 0},
	// A loop that picks a row of the weight by a position it computes
	// (ArgMax, DynamicSlice on device-held starts) each iteration.
	{"pick_row", func(in []T) T {
		x, w, thr := in[0], in[1], in[2]
		out := control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Square(v[0])), thr) },
			func(v []T) []T {
				i := ops.Reshape(ops.ArgMax(ops.Sum(v[0], 0), 0), 1)
				row := ops.DynamicSlice(w, ops.Concatenate(0, i, ops.ZerosLike(i)), 1, w.Dim(1))
				return []T{ops.Add(ops.Tanh(ops.Add(v[0], row)), ops.Mul(v[0], scalar(v[0], 0.5)))}
			}, []T{x}, control.WhileOptions{MaxIterations: 5})
		return ops.Sum(ops.Square(out[0]))
	}, func(r *rand.Rand, b int) [][]int {
		d := 2 + r.IntN(3)
		return [][]int{{b, d}, {d, d}, {}}
	}, -1, 1, 0},
	// A Case on an index the data choose (the column of x's largest sum),
	// in a bounded loop: a chain of Conds, decided with guards where a
	// trace unrolls.
	{"case_in_loop", func(in []T) T {
		x, w, thr := in[0], in[1], in[2]
		out := control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Abs(v[0])), thr) },
			func(v []T) []T {
				i := ops.ArgMax(ops.Sum(v[0], 0), 0)
				return control.Case(i,
					func() []T { return []T{ops.Add(ops.Mul(v[0], w), scalar(w, 0.3))} },
					func() []T { return []T{ops.Add(ops.Tanh(v[0]), w)} },
					func() []T { return []T{ops.Add(ops.Mul(v[0], scalar(v[0], 1.5)), scalar(v[0], 0.1))} })
			}, []T{x}, control.WhileOptions{MaxIterations: 5})
		return ops.Sum(ops.Square(out[0]))
	}, batchVectorScalar(2, 3), -1, 1, 0},
	// A bounded loop whose condition a Cond computes: which bound it
	// tests the data choose each iteration (recorded, an IF node before
	// the WHILE node and in its body).
	{"cond_pred", func(in []T) T {
		x, w, thr := in[0], in[1], in[2]
		out := control.While(func(v []T) T {
			return control.Cond(ops.Gt(ops.Sum(v[0]), scalar(v[0], 0)),
				func() []T { return []T{ops.Lt(ops.Sum(ops.Square(v[0])), thr)} },
				func() []T { return []T{ops.Lt(ops.Sum(ops.Abs(v[0])), ops.Mul(thr, scalar(thr, 0.5)))} })[0]
		}, func(v []T) []T {
			return []T{ops.Add(ops.Tanh(ops.Mul(v[0], w)), ops.Mul(v[0], scalar(v[0], 1.2)))}
		}, []T{x}, control.WhileOptions{MaxIterations: 5})
		return ops.Sum(ops.Square(out[0]))
	}, batchVectorScalar(2, 3), -1, 1, 0},
	// A Case with no loop around it, on an index the data choose: its
	// trace unrolls (no loop guards it) and must guard the decision.
	{"case_top", func(in []T) T {
		x, w := in[0], in[1]
		i := ops.ArgMax(ops.Sum(x, 0), 0)
		y := control.Case(i,
			func() []T { return []T{ops.Mul(ops.Exp(x), w)} },
			func() []T { return []T{ops.Sub(ops.Square(x), w)} },
			func() []T { return []T{ops.Tanh(ops.Add(x, w))} })
		return ops.Sum(ops.Square(y[0]))
	}, func(r *rand.Rand, b int) [][]int {
		d := 2 + r.IntN(3)
		return [][]int{{b, d}, {d}}
	}, -1, 1, 0},
	// x^n by a counter loop whose bound n is an argument: a trace made
	// where n is 0 or 1 holds no second derivative in its eager record,
	// yet the graph's later calls take more iterations.
	{"power_count", func(in []T) T {
		x, w, n := in[0], in[1], in[2]
		out := control.While(func(v []T) T { return ops.Lt(v[0], n) },
			func(v []T) []T { return []T{ops.Add(v[0], scalar(v[0], 1)), ops.Mul(v[1], x)} },
			[]T{ops.ScalarLike(n, 0), ops.OnesLike(x)})
		return ops.Sum(ops.Mul(out[1], w))
	}, batchVectorScalar(2, 4), 0.5, 1.5, 7},
	// Loops a tape records with no MaxIterations (their gradients' stacks
	// of a depth the trace guesses, where a device records them), whose
	// trip counts vary from 0 to about 17 (values growing by half a pass
	// up to 40 thr²), at the top and inside a counted loop.
	{"unbounded", func(in []T) T {
		x, w, thr := in[0], in[1], in[2]
		limit := ops.Mul(ops.Square(thr), scalar(thr, 40))
		out := control.While(func(v []T) T { return ops.Lt(ops.Sum(v[0]), limit) },
			func(v []T) []T {
				return []T{ops.Add(ops.Mul(ops.Abs(v[0]), scalar(w, 1.5)), ops.Add(ops.Square(w), scalar(w, 0.1)))}
			}, []T{x})
		return ops.Sum(ops.Sin(out[0]))
	}, batchVectorScalar(1, 3), -1.5, 1.5, 0},
	{"nested_unbounded", func(in []T) T {
		x, w, thr := in[0], in[1], in[2]
		limit := ops.Mul(ops.Square(thr), scalar(thr, 8))
		out := control.Fori(0, 3, func(_ T, v []T) []T {
			h := control.While(func(u []T) T { return ops.Lt(ops.Sum(ops.Square(u[0])), limit) },
				func(u []T) []T {
					return []T{ops.Add(ops.Mul(ops.Abs(u[0]), scalar(w, 1.3)), ops.Add(ops.Square(w), scalar(w, 0.05)))}
				}, []T{v[0]})
			return []T{ops.Tanh(h[0])}
		}, []T{x})
		return ops.Sum(ops.Square(out[0]))
	}, batchVectorScalar(1, 3), -1.5, 1.5, 0},
}

// controlCase is one control-flow program as torch_eval.py reads it.
type controlCase struct {
	ID       int      `json:"id"`
	Template string   `json:"template"`
	Inputs   []*Array `json:"inputs"`
	Second   *Array   `json:"second"` // v of the Hessian-vector product

	tpl *template
	in  []T
	v   T
}

// derivatives is a control-flow program's loss, gradients (one per input)
// and Hessian-vector products: the gradient of sum(v * d loss/d in[0])
// with respect to every input.
func derivatives(loss func([]T) T, in []T, v T) []T {
	outer := tape.New()
	outer.Watch(in...)
	inner := tape.New()
	inner.Watch(in...)
	y := loss(in)
	g := inner.Gradient(y, in...)
	gv := tensor.Scalar(0.0)
	if g[0] != nil {
		gv = ops.Sum(ops.Mul(g[0], v))
	}
	hv := outer.Gradient(gv, in...)
	return append(append([]T{y}, g...), hv...)
}

// gradients returns loss(in) and its gradients with respect to in.
func gradients(loss func([]T) T, in []T) []T {
	tp := tape.New()
	tp.Watch(in...)
	y := loss(in)
	return append([]T{y}, tp.Gradient(y, in...)...)
}

// newControlCase makes case id of template k: its sizes drawn once per
// seed and template (so that cases share a traced signature) but for the
// batch, its values per case.
func newControlCase(seed uint64, id, k, batch int) *controlCase {
	tpl := &templates[k]
	shapes := tpl.shapes(rand.New(rand.NewPCG(seed, uint64(k)<<32)), batch)
	r := rand.New(rand.NewPCG(seed, uint64(id)))
	c := &controlCase{ID: id, Template: tpl.name, tpl: tpl}
	for i, s := range shapes {
		x := tensor.RandUniform(tensor.NewRNG(r.Uint64()), tensor.Float64, tpl.lo, tpl.hi, s...)
		switch {
		case i == len(shapes)-1 && tpl.count > 0:
			x = tensor.Scalar(int64(r.IntN(tpl.count + 1))) // a trip count
		case i == len(shapes)-1 && len(s) == 0:
			x = tensor.RandUniform(tensor.NewRNG(r.Uint64()), tensor.Float64, 1, 6) // a threshold
		}
		c.in = append(c.in, x)
		c.Inputs = append(c.Inputs, encode(x))
	}
	c.v = tensor.RandUniform(tensor.NewRNG(r.Uint64()), tensor.Float64, -1, 1, c.in[0].Shape()...)
	c.Second = encode(c.v)
	return c
}

// Seeded control-flow programs (data-dependent while loops, scans, conds
// in loops, nested loops) agree with PyTorch in their losses, gradients
// and Hessian-vector products; traced (tapes inside, several calls with
// other trip counts, a retrace for another batch size, a tape around the
// call) they agree with eager.
func TestControlFlowMatchesPyTorch(t *testing.T) {
	needTorch(t)
	for _, seed := range seeds(t) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			var cases []*controlCase
			want := map[int][]T{}
			for i := range max(*flagCases/4, len(templates)*2) {
				k := i % len(templates)
				batch := 1 + min((i/len(templates))%4, 1) // mostly 2, some 1: a retrace
				c := newControlCase(seed, i, k, batch)
				cases = append(cases, c)
				want[i] = derivatives(c.tpl.loss, c.in, c.v)
			}
			checkControlTraced(t, seed, cases, want)
			checkControlReleasing(t, seed, cases, want)
			res := runTorch(t, cases)
			for _, c := range cases {
				r := res[c.ID]
				if r == nil || r.Error != "" {
					t.Errorf("case %d (%s): PyTorch failed: %v", c.ID, c.Template, r)
					continue
				}
				n := len(c.in)
				torch := append(append(append([]*Array{}, r.Values...), r.Grads...), r.Second...)
				for i, got := range want[c.ID] {
					what := []string{"loss", "gradient", "Hessian-vector product"}[min((i+n-1)/n, 2)]
					if d := compare(got, torch[i]); d != "" {
						t.Errorf("case %d (%s), %s %d: %s", c.ID, c.Template, what, (i+n-1)%n, d)
					}
				}
			}
			t.Logf("seed %d: %d control-flow programs (%d templates), each: loss, %s", seed, len(cases), len(templates),
				"gradients, Hessian-vector products; traced with tapes inside and around; under a releasing tape")
		})
	}
}

// checkControlTraced runs each template traced over every case of it (the
// first call traces; the others, other inputs and trip counts, run the
// graph or, where a guard fails, eagerly; another batch size retraces),
// with the derivatives taken inside, and once more under a tape around
// the call; every result equals the eager one.
func checkControlTraced(t *testing.T, seed uint64, cases []*controlCase, want map[int][]T) {
	t.Helper()
	for k := range templates {
		tpl := &templates[k]
		inside := trace.NewFunction(func(in []T) []T { return derivatives(tpl.loss, in[:len(in)-1], in[len(in)-1]) })
		around := trace.NewFunction(func(in []T) []T { return []T{tpl.loss(in)} })
		for _, c := range cases {
			if c.tpl != tpl {
				continue
			}
			got, err := inside.Call(append(append([]T{}, c.in...), c.v)...)
			if err != nil {
				t.Errorf("seed %d case %d (%s) traced: %v", seed, c.ID, tpl.name, err)
				continue
			}
			for i, w := range want[c.ID] {
				if d := sameAs(got[i], w); d != "" {
					t.Errorf("seed %d case %d (%s) traced, result %d: %s", seed, c.ID, tpl.name, i, d)
				}
			}
			tp := tape.New()
			tp.Watch(c.in...)
			loss, err := around.Call(c.in...)
			if err != nil {
				t.Errorf("seed %d case %d (%s) under a tape: %v", seed, c.ID, tpl.name, err)
				continue
			}
			for i, g := range tp.Gradient(loss[0], c.in...) {
				if d := sameAs(g, want[c.ID][1+i]); d != "" {
					t.Errorf("seed %d case %d (%s) under a tape, gradient %d: %s", seed, c.ID, tpl.name, i, d)
				}
			}
		}
	}
}

// checkControlReleasing runs each case eagerly under a tape that releases
// its intermediates once its gradient is taken (nn.TrainStep's): the loop
// drops what no gradient rule reads as it goes, and the loss and
// gradients are still the eager ones; in one pass and split in two
// (tape.Tape.GradientSplit, the first input's gradient first: the loops'
// regions give all their gradients in the first pass).
func checkControlReleasing(t *testing.T, seed uint64, cases []*controlCase, want map[int][]T) {
	t.Helper()
	for _, split := range []bool{false, true} {
		how := "under a releasing tape"
		if split {
			how += ", split"
		}
		for _, c := range cases {
			var loss T
			var grads []T
			err := tensor.Catch(func() {
				tp := tape.New(tape.Options{ReleaseIntermediates: true})
				tp.Watch(c.in...)
				loss = c.tpl.loss(c.in)
				if !split {
					grads = tp.Gradient(loss, c.in...)
					return
				}
				first, rest := tp.GradientSplit(loss, nil, c.in, 1)
				grads = append(first, rest()...)
			})
			if err != nil {
				t.Errorf("seed %d case %d (%s) %s: %v", seed, c.ID, c.tpl.name, how, err)
				continue
			}
			for i, g := range append([]T{loss}, grads...) {
				if d := sameAs(g, want[c.ID][i]); d != "" {
					t.Errorf("seed %d case %d (%s) %s, result %d: %s", seed, c.ID, c.tpl.name, how, i, d)
				}
			}
		}
	}
}

// The control-flow programs placed on two devices: each template's loss,
// gradients and Hessian-vector products computed inside a placement scope
// for cpu:1 (every op moves there but a loop's integer counter, which stays
// on cpu:0 with its loop), traced, cut by device (graph.Partition: the
// loops span both partitions, driven in cpu:1's by control loops) and run
// at once, over every case of the template: equal to the eager values.
// Needs no PyTorch.
func TestControlFlowPartitioned(t *testing.T) {
	other := device.SecondCPU()
	spanned := make([]bool, len(templates)) // some case's graph spans both devices
	defer func() {
		for k, ok := range spanned {
			if !ok && !t.Failed() {
				t.Errorf("%s: no case's graph spans both devices: nothing was partitioned", templates[k].name)
			}
		}
	}()
	for _, seed := range seeds(t) {
		for k := range templates {
			tpl := &templates[k]
			fn := func(in []T) []T {
				var out []T
				if err := device.With(other, func() { out = derivatives(tpl.loss, in[:len(in)-1], in[len(in)-1]) }); err != nil {
					panic(err)
				}
				return out
			}
			f := trace.NewFunction(fn)
			f.Partitions = &graph.PartitionOptions{} // cut by device, the parts run at once in this process
			for i := range 4 {
				c := newControlCase(seed, i*len(templates)+k, k, 2)
				args := append(append([]T{}, c.in...), c.v)
				want := derivatives(tpl.loss, c.in, c.v)
				got, err := f.Call(args...)
				if err != nil {
					t.Fatalf("seed %d case %d (%s) partitioned: %v", seed, c.ID, tpl.name, err)
				}
				// A loop (its counter stays on cpu:0) spans both devices; a
				// trace whose loops ran no iteration (guarded) may hold
				// cpu:1's ops alone.
				p, err := graph.Partition(f.Graph(args...))
				if err != nil {
					t.Fatalf("seed %d case %d (%s): %v", seed, c.ID, tpl.name, err)
				}
				if !slices.Contains(p.Devices, device.Device(other)) || len(p.Parts) != len(p.Devices) {
					t.Fatalf("seed %d case %d (%s): %d partitions of devices %v, want one per device, cpu:1's among them", seed, c.ID, tpl.name, len(p.Parts), p.Devices)
				}
				spanned[k] = spanned[k] || len(p.Parts) == 2
				if len(got) != len(want) {
					t.Fatalf("seed %d case %d (%s): %d results, want %d", seed, c.ID, tpl.name, len(got), len(want))
				}
				for j, w := range want { // nil as zeros, as the traced checks take them
					if got[j] == nil {
						if w != nil {
							t.Errorf("seed %d case %d (%s) partitioned, result %d: nil, want %v", seed, c.ID, tpl.name, j, w)
						}
						continue
					}
					h, err := got[j].To(device.Host())
					if err != nil {
						t.Fatal(err)
					}
					if d := sameAs(h, w); d != "" {
						t.Errorf("seed %d case %d (%s) partitioned, result %d: %s", seed, c.ID, tpl.name, j, d)
					}
				}
			}
		}
	}
}

// The same placed on two ranks (collective.RankCPU(1)), each a goroutine
// over Loopback running its own partitions through the rendezvous: the
// results stay on rank 1's device, so rank 1 returns them (rank 0, nil),
// and they equal the eager values.
func TestControlFlowPartitionedOverRanks(t *testing.T) {
	far := collective.RankCPU(1)
	var scope sync.Mutex // fn's turns in the process's placement scope
	for _, seed := range seeds(t) {
		for k := range templates {
			tpl := &templates[k]
			fn := func(in []T) []T {
				scope.Lock()
				defer scope.Unlock()
				var out []T
				if err := device.With(far, func() { out = derivatives(tpl.loss, in[:len(in)-1], in[len(in)-1]) }); err != nil {
					panic(err)
				}
				return out
			}
			var cases []*controlCase
			for i := range 3 {
				cases = append(cases, newControlCase(seed, i*len(templates)+k, k, 2))
			}
			args := func(c *controlCase) []T { return append(append([]T{}, c.in...), c.v) }
			// A placement scope is the whole process's (device.With): while
			// one rank's fn runs in it, ops the other rank runs (its trace's
			// start, its eager fallback) would be placed by it too. So each
			// rank traces every signature first, one rank after the other;
			// the ranks then run their graphs at once, which run their ops
			// where the trace placed them, and fn only where a guard fails
			// (one rank's fn at a time: nothing in it is exchanged).
			fs := make([]*trace.Function, 2)
			for r := range fs {
				fs[r] = trace.NewFunction(fn)
				for _, c := range cases {
					if _, err := fs[r].Call(args(c)...); err != nil {
						t.Fatalf("seed %d (%s), rank %d, case %d: tracing: %v", seed, tpl.name, r, c.ID, err)
					}
				}
			}
			results := make([][][]T, 2)
			err := ranktest.Run(2, 30*time.Second, func(r int, rdv *collective.Rendezvous) error {
				f := fs[r]
				f.Partitions = &graph.PartitionOptions{RankOf: collective.RankOf, Rank: r, Exchange: rdv}
				for _, c := range cases {
					out, err := f.Call(args(c)...)
					if err != nil {
						return fmt.Errorf("case %d: %w", c.ID, err)
					}
					results[r] = append(results[r], out)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("seed %d (%s): %v", seed, tpl.name, err)
			}
			for ci, c := range cases {
				want := derivatives(tpl.loss, c.in, c.v)
				for j, w := range want {
					// The results live on rank 1's device; a graph with
					// guards runs whole on every rank (both have them).
					got := results[1][ci][j]
					if got == nil {
						got = results[0][ci][j]
					}
					if got == nil {
						if w != nil {
							t.Errorf("seed %d case %d (%s), result %d: nil on both ranks, want %v", seed, c.ID, tpl.name, j, w)
						}
						continue
					}
					h, err := got.To(device.Host())
					if err != nil {
						t.Fatal(err)
					}
					if d := sameAs(h, w); d != "" {
						t.Errorf("seed %d case %d (%s) over ranks, result %d: %s", seed, c.ID, tpl.name, j, d)
					}
				}
			}
		}
	}
}
