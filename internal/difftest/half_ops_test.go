package difftest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

type halfOpCase struct {
	ID     int      `json:"id"`
	Op     string   `json:"op"`
	DType  string   `json:"dtype"`
	A      []uint16 `json:"a"`
	B      []uint16 `json:"b,omitempty"`
	ShapeA []int    `json:"shape_a"`
	ShapeB []int    `json:"shape_b,omitempty"`
}

type halfOpResult struct {
	ID   int      `json:"id"`
	Bits []uint16 `json:"bits"`
}

// halfOps are the ops compared: each takes one or two operands, the
// second's shape given where it has one.
var halfOps = []struct {
	name  string
	fn    func(a, b *tensor.Tensor) *tensor.Tensor
	two   bool
	exact bool    // the float32 result is exact, so the rounded one must match bit for bit
	lo    float32 // the operands' range
	// roundsWeights: a GPU's tensor-core kernels round the op's weights
	// (attention's probabilities, which sum to 1) to the half type before
	// their product with the values, as FlashAttention does, so its
	// result may be off the CPU's by a unit roundoff of the largest value
	// besides a unit in the last place (halfWeightsClose): where an
	// output is small beside its terms, that is many units of its own.
	roundsWeights bool
}{
	{"add", func(a, b *tensor.Tensor) *tensor.Tensor { return ops.Add(a, b) }, true, true, -4, false},
	{"sub", func(a, b *tensor.Tensor) *tensor.Tensor { return ops.Sub(a, b) }, true, true, -4, false},
	{"mul", func(a, b *tensor.Tensor) *tensor.Tensor { return ops.Mul(a, b) }, true, true, -4, false},
	{"div", func(a, b *tensor.Tensor) *tensor.Tensor { return ops.Div(a, b) }, true, false, 0.25, false},
	{"exp", func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.Exp(a) }, false, false, -4, false},
	{"log", func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.Log(a) }, false, false, 0.01, false},
	{"tanh", func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.Tanh(a) }, false, false, -4, false},
	{"sigmoid", func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.Sigmoid(a) }, false, false, -4, false},
	{"sqrt", func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.Sqrt(a) }, false, false, 0, false},
	{"relu", func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.Relu(a) }, false, true, -4, false},
	{"neg", func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.Neg(a) }, false, true, -4, false},
	{"abs", func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.Abs(a) }, false, true, -4, false},
	{"sum_rows", func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.Sum(a, 1) }, false, false, -4, false},
	{"sum_all", func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.Sum(a) }, false, false, -4, false},
	{"mean_rows", func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.Mean(a, 1) }, false, false, -4, false},
	{"amax_rows", func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.Amax(a, 1) }, false, true, -4, false},
	{"softmax_rows", func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.Softmax(a, 1) }, false, false, -4, false},
	{"matmul", func(a, b *tensor.Tensor) *tensor.Tensor { return ops.MatMul(a, b) }, true, false, -2, false},
	// Self-attention of a's rows (one batch matrix, the rows 16 wide for
	// the GPU's tensor-core kernels): softmax(a·aᵀ/√d)·a in float32,
	// rounded once.
	{"attention", func(a, _ *tensor.Tensor) *tensor.Tensor {
		x := ops.Reshape(a, append([]int{1}, a.Shape()...)...)
		return ops.Reshape(ops.Attention(x, x, x, nil, false, 0), a.Shape()...)
	}, false, false, -1, true},
	// The multi-tensor ops a loss scale's check and a norm's clipping
	// take: Σa² + Σb² (squares and sums in float64, rounded to float32,
	// then once more) and a·0.3 (the scale rounded to the half type).
	{"sum_squares", func(a, b *tensor.Tensor) *tensor.Tensor { return ops.SumOfSquares(a, b) }, true, false, -4, false},
	{"scale_each", func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.ScaleEach(ops.ScalarLike(a, 0.3), a)[0] }, false, true, -4, false},
}

// Ops on bfloat16 agree with PyTorch's bfloat16 ops, and on float16 with
// NumPy's float32 arithmetic rounded once, within one unit in the last
// place (bit for bit where the float32 result is exact: sums, differences
// and products of two half values, selections), over random operands of
// every op and both half types.
func TestHalfOpsAgainstTorch(t *testing.T) {
	needTorch(t)
	r := rand.New(rand.NewPCG(13, 17))
	var cases []halfOpCase
	var xs [][2]*tensor.Tensor
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		for _, op := range halfOps {
			for range 3 {
				shapeA, shapeB := []int{8, 16}, []int{8, 16}
				if op.name == "matmul" {
					shapeB = []int{16, 4}
				}
				draw := func(shape []int) (*tensor.Tensor, []uint16) {
					f := make([]float32, shape[0]*shape[1])
					for i := range f {
						f[i] = op.lo + float32(r.Float64())*(4-op.lo)
					}
					x := tensor.FromFloat32s(dt, f, shape...)
					return x, halfBits(x)
				}
				a, abits := draw(shapeA)
				c := halfOpCase{ID: len(cases), Op: op.name, DType: dt.String(), A: abits, ShapeA: shapeA}
				var b *tensor.Tensor
				if op.two {
					b, c.B = draw(shapeB)
					c.ShapeB = shapeB
				}
				cases = append(cases, c)
				xs = append(xs, [2]*tensor.Tensor{a, b})
			}
		}
	}
	want := runCases(t, "half_ops.py", cases, func(r *halfOpResult) int { return r.ID })
	off := 0
	for i, c := range cases {
		op := halfOps[(i/3)%len(halfOps)]
		bits := halfBits(op.fn(xs[i][0], xs[i][1]))
		w := want[c.ID]
		if w == nil || len(w.Bits) != len(bits) {
			t.Fatalf("%s %s: %d results, the reference %v", c.DType, c.Op, len(bits), w)
		}
		for j, g := range bits {
			ok, one := halfClose(g, w.Bits[j], op.exact, 1)
			if !ok {
				t.Fatalf("%s %s, element %d: %#04x, the reference %#04x", c.DType, c.Op, j, g, w.Bits[j])
			}
			if one {
				off++
			}
		}
	}
	t.Logf("%d cases; %d results one unit in the last place off the reference", len(cases), off)
}

// halfBits is x's elements (bfloat16 or float16) as their bits.
func halfBits(x *tensor.Tensor) []uint16 {
	var bits []uint16
	if x.DType() == tensor.BFloat16 {
		for _, v := range tensor.ToSlice[tensor.BF16](x) {
			bits = append(bits, uint16(v))
		}
		return bits
	}
	for _, v := range tensor.ToSlice[tensor.F16](x) {
		bits = append(bits, uint16(v))
	}
	return bits
}

// halfClose reports whether half values g and w agree: bit for bit where
// exact, else within ulps units in the last place (off, when apart),
// never of opposite signs unless both are zeros.
func halfClose(g, w uint16, exact bool, ulps int) (ok, off bool) {
	d := int(g) - int(w)
	if d < 0 {
		d = -d
	}
	if (exact && d != 0) || d > ulps || (g^w)&0x8000 != 0 && g&0x7fff|w&0x7fff != 0 {
		return false, false
	}
	return true, d != 0
}

// halfWeightsClose reports whether g is within u·max|x| of w (u the
// half type's unit roundoff, x the values the weights multiply) plus a
// unit in the last place of w: the error of weights summing to 1, each
// rounded to the half type, times values of at most max|x|.
func halfWeightsClose(dt tensor.DType, g, w uint16, x []uint16) bool {
	val := func(b uint16) float64 {
		if dt == tensor.BFloat16 {
			return float64(tensor.BF16(b).Float32())
		}
		return float64(tensor.F16(b).Float32())
	}
	u, ulp := 0x1p-8, 0x1p-7 // bfloat16: 8 bits of significand
	if dt == tensor.Float16 {
		u, ulp = 0x1p-11, 0x1p-10
	}
	largest := 0.0
	for _, b := range x {
		largest = max(largest, math.Abs(val(b)))
	}
	_, e := math.Frexp(val(w))
	return math.Abs(val(g)-val(w)) <= u*largest+math.Ldexp(ulp, e-1)
}
