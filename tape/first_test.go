package tape_test

import (
	"maps"
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

// GradientFirst gives GradientSeeded's values bit for bit, hands the
// first sources' gradients over before any weight-only rule has run, and
// runs each rule once.
func TestGradientFirst(t *testing.T) {
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
		var handed []*tensor.Tensor
		var rulesThen map[string]int
		got := tp.GradientFirst(firstNet(x, w, rules), seed, sources(), 1, func(g []*tensor.Tensor) {
			handed = slices.Clone(g)
			rulesThen = maps.Clone(rules)
			if len(g) != 1 || g[0] == nil {
				t.Errorf("%+v: handed %v, want x's gradient", opts, g)
			}
		})
		if rulesThen["w3"] != 0 || rulesThen["mixed"] != 1 {
			t.Errorf("%+v: when x's gradient was handed over the rules had run %v times, want the mixed region's once and w3's not", opts, rulesThen)
		}
		if rules["mixed"] != 1 || rules["w3"] != 1 {
			t.Errorf("%+v: two passes ran the rules %v times, want once each", opts, rules)
		}
		if len(handed) != 1 || handed[0] != got[0] {
			t.Errorf("%+v: ready was handed another tensor than the result", opts)
		}
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

// GradientFirst where the target does not depend on the first sources
// hands nil over (zeros with UnconnectedZeros) and computes the rest; bad
// counts are errors.
func TestGradientFirstUnconnected(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2})
	v := tape.NewVariable("v", tensor.FromSlice([]float64{3, 4}))
	tp := tape.New()
	tp.Watch(x)
	y := ops.Sum(ops.Square(v.Value()))
	var handed []*tensor.Tensor
	got := tp.GradientFirst(y, nil, []*tensor.Tensor{x, v.Value()}, 1, func(g []*tensor.Tensor) { handed = g })
	if len(handed) != 1 || handed[0] != nil || got[0] != nil {
		t.Errorf("unconnected first source: handed %v, result %v", handed, got[0])
	}
	if !slices.Equal(vals(got[1]), []float64{6, 8}) {
		t.Errorf("the rest: %v, want [6 8]", vals(got[1]))
	}
	for _, first := range []int{0, 3} {
		tp := tape.New()
		tp.Watch(x)
		err := tensor.Catch(func() {
			tp.GradientFirst(ops.Sum(x), nil, []*tensor.Tensor{x, x}, first, func([]*tensor.Tensor) {})
		})
		if err == nil {
			t.Errorf("first %d of 2 sources: no error", first)
		}
	}
}
