package ops_test

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func rnd(seed uint64, lo, hi float64, shape ...int) *tensor.Tensor {
	return tensor.RandUniform(tensor.NewRNG(seed), tensor.Float64, lo, hi, shape...)
}

type T = *tensor.Tensor

// Compositions, checked against finite differences in float64 (every
// registered op's gradients are checked from its samples in the
// conformance table, package conformance).
func TestGradients(t *testing.T) {
	cases := []gradCase{
		{"BroadcastDims", func(x []T) T { return ops.BroadcastDims(ops.Mul, x[0], x[1], 0) }, []T{rnd(1, -1, 1, 2, 3), rnd(2, -1, 1, 2)}},
		{"Sign", func(x []T) T { return ops.Mul(ops.Sign(x[0]), x[0]) }, []T{rnd(1, 0.1, 1, 5)}},
		{"Cast", func(x []T) T {
			return ops.Cast(ops.Mul(ops.Cast(x[0], tensor.Float32), ops.Cast(x[0], tensor.Float32)), tensor.Float64)
		},
			[]T{rnd(1, -1, 1, 3)}},
		{"SoftmaxCrossEntropy", func(x []T) T { return ops.SoftmaxCrossEntropy(x[0], ops.Softmax(x[1], -1)) },
			[]T{rnd(1, -2, 2, 3, 4), rnd(2, -2, 2, 3, 4)}},
	}
	// Through float32 only a large step is meaningful (x*x is exact under
	// it), and the analytic side carries float32 rounding.
	steps := map[string]float64{"Cast": 1e-2}
	tols := map[string]float64{"Cast": approx.Float32}
	runGradients(t, cases, steps, tols)
}

// Non-differentiable ops block gradients rather than give silent zeros.
func TestNonDifferentiableOpsBlock(t *testing.T) {
	x := rnd(1, -1, 1, 3)
	tp := tape.New(tape.Options{Persistent: true})
	tp.Watch(x)
	for name, y := range map[string]T{
		"StopGradient": ops.StopGradient(x),
		"Cast to int":  ops.Cast(ops.Cast(x, tensor.Int32), tensor.Float64),
		"Eq":           ops.Cast(ops.Eq(x, x), tensor.Float64),
	} {
		if g := tp.Gradient(ops.Sum(y), x)[0]; g != nil {
			t.Errorf("%s: gradient %v, want nil", name, g)
		}
	}
}

// Div's gradient in its denominator is the quotient over b again, not
// a/b²: b² underflows for a tiny b, and where a is 0 too (a product of
// tiny factors that underflowed) a/b² was 0/0. Found by the differential
// suite: the Hessian-vector product through a product of tanh's of
// softmax outputs came out NaN where PyTorch's is finite.
func TestDivGradientOfATinyDenominator(t *testing.T) {
	a, b := tensor.Scalar(0.0), tensor.Scalar(1e-200)
	tp := tape.New()
	tp.Watch(a, b)
	g := tp.Gradient(ops.Div(a, b), a, b)
	if da, db := g[0].Float(), g[1].Float(); da != 1e200 || db != 0 {
		t.Errorf("d(a/b) at a=0, b=1e-200: %v, %v; want 1e200, 0", da, db)
	}
	// The Hessian-vector product of a product that underflows to 0.
	x := tensor.FromSlice([]float64{1e-200, 1e-150, 3, 0.5})
	outer := tape.New()
	outer.Watch(x)
	inner := tape.New()
	inner.Watch(x)
	grad := inner.Gradient(ops.Reduce(x, ops.Reduction{Kind: ops.ReduceProd}), x)[0]
	hv := outer.Gradient(ops.Sum(ops.Mul(grad, tensor.FromSlice([]float64{1, -1, 2, 1}))), x)[0]
	for i, v := range tensor.ToSlice[float64](hv) {
		if v != v {
			t.Errorf("Hessian-vector product element %d is NaN: %v", i, hv)
		}
	}
}

// A product's first and second derivatives are the products of the other
// elements, exact where the product itself underflows (y/x gives 0 there)
// and where zeros sit beside tiny or subnormal elements (dividing by them
// overflowed, and 0·Inf made the second derivatives NaN; found by the
// differential suite with softmax outputs multiplied). The reduction runs
// over two dims of three, so the reduced elements are not contiguous.
func TestProductGradientsWhereTheProductUnderflows(t *testing.T) {
	cases := [][]float64{
		{1e-200, 1e-200, 5, 2, 0.5, 3},         // the product underflows; no zeros
		{0, 5e-310, 2, 3, 1e-200, 4},           // a zero beside a subnormal
		{0, 0, 1e-300, 7, 1e-300, 1},           // two zeros, tiny others
		{0, 0, 0, 1e-310, 2, 3},                // three zeros
		{-1e-160, 1e-160, 3, -2, 1e-160, 0.25}, // signs
	}
	for _, vals := range cases {
		// [2 3 2] reduced over dims 0 and 2: reduction j holds the
		// elements at (i, j, k) for i, k in {0, 1}.
		data := make([]float64, 12)
		for i := range data {
			data[i] = vals[i%len(vals)]
		}
		data[2], data[8] = vals[(len(vals)+1)/2], 1.5 // vary the three reductions
		x := tensor.FromSlice(data, 2, 3, 2)
		members := func(j int) []int { return []int{j * 2, j*2 + 1, 6 + j*2, 6 + j*2 + 1} }
		others := func(j int, skip ...int) float64 { // in float64, exact order aside
			p := 1.0
			for _, m := range members(j) {
				if !slicesContain(skip, m) {
					p *= data[m]
				}
			}
			return p
		}
		outer := tape.New(tape.Options{Persistent: true})
		outer.Watch(x)
		inner := tape.New()
		inner.Watch(x)
		grad := inner.Gradient(ops.Sum(ops.Reduce(x, ops.Reduction{Kind: ops.ReduceProd, Dims: []int{0, 2}})), x)[0]
		hess := tensor.ToSlice[float64](outer.Jacobian(grad, x))
		got := tensor.ToSlice[float64](grad)
		for j := 0; j < 3; j++ {
			for _, a := range members(j) {
				if want := others(j, a); !relClose(got[a], want) {
					t.Errorf("%v: d/dx[%d] = %v, want %v", vals, a, got[a], want)
				}
				for b := range data {
					want := 0.0
					if b != a && slicesContain(members(j), b) {
						want = others(j, a, b)
					}
					if h := hess[a*12+b]; !relClose(h, want) {
						t.Errorf("%v: d²/dx[%d]dx[%d] = %v, want %v", vals, a, b, h, want)
					}
				}
			}
		}
	}
}

// relClose: within 1e-12 of want relative to want itself, however tiny.
func relClose(got, want float64) bool {
	return math.Abs(got-want) <= 1e-12*math.Abs(want)
}

func slicesContain(s []int, v int) bool {
	for _, e := range s {
		if e == v {
			return true
		}
	}
	return false
}
