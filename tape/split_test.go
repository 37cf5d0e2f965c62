package tape_test

import (
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// firstNet is a pipeline stage's kind of function of an input x and
// weights w: layers with a weight shared by two of them, a region whose
// rule gives the gradients of x's path and of a weight at once (mixed),
// a weight that reaches the target only through a region of its own
// (counted in rules["w3"]), and a weight unused. rules counts each
// region's rule runs; inW is set once w[3]'s has run.
func firstNet(x *tensor.Tensor, w []*tape.Variable, rules map[string]int) *tensor.Tensor {
	mixed := tape.CustomGradient(func(xs []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{ops.Mul(xs[0], xs[1])}
	}, func(xs, ys, dys []*tensor.Tensor) []*tensor.Tensor {
		rules["mixed"]++
		return []*tensor.Tensor{ops.Mul(dys[0], xs[1]), ops.Mul(dys[0], xs[0])}
	})
	onlyW := tape.CustomGradient(func(xs []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{ops.Tanh(xs[0])}
	}, func(xs, ys, dys []*tensor.Tensor) []*tensor.Tensor {
		rules["w3"]++
		one := ops.ScalarLike(ys[0], 1)
		return []*tensor.Tensor{ops.Mul(dys[0], ops.Sub(one, ops.Square(ys[0])))}
	})
	h := ops.Tanh(ops.MatMul(x, w[0].Value()))
	h = mixed(h, w[1].Value())[0]
	h = ops.Relu(ops.Add(ops.MatMul(h, onlyW(w[3].Value())[0]), w[2].Value()))
	h = ops.MatMul(h, w[0].Value())
	return ops.Mul(h, h)
}

func firstVars() []*tape.Variable {
	rng := tensor.NewRNG(5)
	shapes := [][]int{{3, 3}, {2, 3}, {1, 3}, {3, 3}, {3, 3}}
	w := make([]*tape.Variable, len(shapes))
	for i, s := range shapes {
		w[i] = tape.NewVariable("w", tensor.RandNormal(rng, tensor.Float64, s...))
	}
	return w
}

// GradientSplit gives GradientSeeded's values bit for bit, returns the
// first sources' gradients before any weight-only rule has run, and runs
// each rule once.
func TestGradientSplit(t *testing.T) {
	rng := tensor.NewRNG(9)
	x := tensor.RandNormal(rng, tensor.Float64, 2, 3)
	seed := tensor.RandNormal(rng, tensor.Float64, 2, 3)
	w := firstVars()
	sources := func() []*tensor.Tensor {
		return []*tensor.Tensor{x, w[0].Value(), w[1].Value(), w[2].Value(), w[3].Value(), w[4].Value()}
	}
	for _, opts := range []tape.Options{{}, {ReleaseIntermediates: true}, {UnconnectedZeros: true}} {
		rules := map[string]int{}
		tp := tape.New(opts)
		tp.Watch(x)
		want := tp.GradientSeeded(firstNet(x, w, rules), seed, sources()...)
		if rules["mixed"] != 1 || rules["w3"] != 1 {
			t.Fatalf("%+v: one pass ran the rules %v times, want once each", opts, rules)
		}

		clear(rules)
		tp = tape.New(opts)
		tp.Watch(x)
		firsts, rest := tp.GradientSplit(firstNet(x, w, rules), seed, sources(), 1)
		if rules["w3"] != 0 || rules["mixed"] != 1 {
			t.Errorf("%+v: when x's gradient was returned the rules had run %v times, want the mixed region's once and w3's not", opts, rules)
		}
		if len(firsts) != 1 || firsts[0] == nil {
			t.Fatalf("%+v: first %v, want x's gradient", opts, firsts)
		}
		if !slices.Equal(vals(firsts[0]), vals(want[0])) {
			t.Errorf("%+v: x: %v, want %v (bit for bit)", opts, vals(firsts[0]), vals(want[0]))
		}
		got := rest()
		if rules["mixed"] != 1 || rules["w3"] != 1 {
			t.Errorf("%+v: two passes ran the rules %v times, want once each", opts, rules)
		}
		if len(got) != len(want)-1 {
			t.Fatalf("%+v: rest gave %d gradients, want %d", opts, len(got), len(want)-1)
		}
		got = append([]*tensor.Tensor{firsts[0]}, got...)
		for i := range want {
			switch {
			case want[i] == nil || got[i] == nil:
				if want[i] != got[i] {
					t.Errorf("%+v: source %d: %v, want %v", opts, i, got[i], want[i])
				}
			case !slices.Equal(vals(got[i]), vals(want[i])):
				t.Errorf("%+v: source %d: %v, want %v (bit for bit)", opts, i, vals(got[i]), vals(want[i]))
			}
		}
		if (got[5] != nil) != opts.UnconnectedZeros {
			t.Errorf("%+v: the unused weight's gradient is %v", opts, got[5])
		}
	}
}

// GradientSplit where the target does not depend on the first sources
// gives nil (zeros with UnconnectedZeros) and computes the rest; bad
// counts and a second call of rest are errors.
func TestGradientSplitUnconnected(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2})
	v := tape.NewVariable("v", tensor.FromSlice([]float64{3, 4}))
	tp := tape.New()
	tp.Watch(x)
	y := ops.Sum(ops.Square(v.Value()))
	firsts, rest := tp.GradientSplit(y, nil, []*tensor.Tensor{x, v.Value()}, 1)
	if len(firsts) != 1 || firsts[0] != nil {
		t.Errorf("unconnected first source: %v", firsts)
	}
	got := rest()
	if len(got) != 1 || !slices.Equal(vals(got[0]), []float64{6, 8}) {
		t.Errorf("the rest: %v, want [[6 8]]", got)
	}
	if err := tensor.Catch(func() { rest() }); err == nil {
		t.Error("rest asked twice: no error")
	}
	for _, first := range []int{0, 3} {
		tp := tape.New()
		tp.Watch(x)
		err := tensor.Catch(func() { tp.GradientSplit(ops.Sum(x), nil, []*tensor.Tensor{x, x}, first) })
		if err == nil {
			t.Errorf("first %d of 2 sources: no error", first)
		}
	}
}

// The rest of a split gradient may be computed after other tapes' passes
// (a pipeline stage's next micro-batch), from another goroutine: the
// values stay GradientSeeded's.
func TestGradientSplitRestLater(t *testing.T) {
	rng := tensor.NewRNG(4)
	w := firstVars()
	type question struct {
		x      *tensor.Tensor
		firsts []*tensor.Tensor
		rest   func() []*tensor.Tensor
		want   []*tensor.Tensor
	}
	var qs []question
	for range 3 {
		x := tensor.RandNormal(rng, tensor.Float64, 2, 3)
		sources := []*tensor.Tensor{x, w[0].Value(), w[1].Value(), w[2].Value(), w[3].Value()}
		tp := tape.New()
		tp.Watch(x)
		want := tp.Gradient(firstNet(x, w, map[string]int{}), sources...)
		tp = tape.New(tape.Options{ReleaseIntermediates: true})
		tp.Watch(x)
		firsts, rest := tp.GradientSplit(firstNet(x, w, map[string]int{}), nil, sources, 1)
		qs = append(qs, question{x, firsts, rest, want})
	}
	done := make(chan []*tensor.Tensor)
	for _, q := range qs {
		go func() { done <- q.rest() }()
		got := append(q.firsts, <-done...)
		for i := range q.want {
			if !slices.Equal(vals(got[i]), vals(q.want[i])) {
				t.Errorf("source %d: %v, want %v", i, vals(got[i]), vals(q.want[i]))
			}
		}
	}
}
