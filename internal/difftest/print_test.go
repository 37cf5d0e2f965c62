package difftest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/eagerflow/eagerflow/tensor"
)

// printCase is one tensor as numpy_print.py reads it.
type printCase struct {
	ID        int      `json:"id"`
	DType     string   `json:"dtype"`
	Shape     []int    `json:"shape"`
	Values    []string `json:"values"`
	Precision int      `json:"precision"`

	x *tensor.Tensor
}

type printResult struct {
	ID   int    `json:"id"`
	Text string `json:"text"`
}

// randomPrintCase draws a tensor: a dtype, a shape (some beyond NumPy's
// summarising threshold, some wide enough to wrap), values of one of
// several kinds (whole numbers, eighths, normal draws, a spread of
// magnitudes that calls for scientific notation, zeros and -0, NaN and
// infinities), and sometimes a fixed precision.
func randomPrintCase(r *rand.Rand, id int) printCase {
	dtypes := []tensor.DType{tensor.Float32, tensor.Float64, tensor.Float32, tensor.Float64, tensor.Float16, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool}
	dt := dtypes[r.IntN(len(dtypes))]
	shape := make([]int, r.IntN(4))
	for i := range shape {
		shape[i] = r.IntN(6)
	}
	switch r.IntN(6) {
	case 0:
		shape = []int{1 + r.IntN(40)} // a row that wraps
	case 1:
		shape = []int{3 + r.IntN(30), 40 + r.IntN(20)} // beyond 1000 elements
	}
	n := tensor.Shape(shape).NumElements()
	kind := r.IntN(6)
	scale := math.Pow(10, float64(r.IntN(25)-12))
	v := make([]float64, n)
	for i := range v {
		switch kind {
		case 0:
			v[i] = float64(r.IntN(2001) - 1000)
		case 1:
			v[i] = float64(r.IntN(161)-80) / 8
		case 2:
			v[i] = r.NormFloat64()
		case 3:
			v[i] = r.NormFloat64() * scale
		case 4:
			v[i] = r.NormFloat64() * math.Pow(10, float64(r.IntN(13)-6))
		default:
			v[i] = []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1.5, -2, 1e-5}[r.IntN(8)]
		}
	}
	x := tensor.FromSlice(v, shape...)
	c := printCase{ID: id, DType: dt.String(), Shape: shape, Precision: -1}
	switch dt {
	case tensor.Float32:
		x = tensor.FromSlice(convert[float32](v), shape...)
		for _, f := range tensor.ToSlice[float32](x) {
			c.Values = append(c.Values, strconv.FormatFloat(float64(f), 'g', -1, 32))
		}
	case tensor.Float64:
		for _, f := range v {
			c.Values = append(c.Values, strconv.FormatFloat(f, 'g', -1, 64))
		}
	case tensor.Float16: // each value exactly, so that NumPy holds the same half
		x = tensor.FromFloat32s(tensor.Float16, convert[float32](v), shape...)
		for _, h := range tensor.ToSlice[tensor.F16](x) {
			c.Values = append(c.Values, strconv.FormatFloat(float64(h.Float32()), 'g', -1, 32))
		}
	case tensor.Bool:
		b := make([]bool, n)
		for i := range b {
			b[i] = r.IntN(2) == 0
			c.Values = append(c.Values, strconv.FormatBool(b[i]))
		}
		x = tensor.FromSlice(b, shape...)
	default:
		ints := make([]int64, n)
		for i := range ints {
			ints[i] = int64(r.IntN(300))
			if dt != tensor.Uint8 {
				ints[i] = int64(r.IntN(2_000_001) - 1_000_000)
				if r.IntN(4) == 0 {
					ints[i] /= 1000
				}
			}
			c.Values = append(c.Values, strconv.FormatInt(ints[i], 10))
		}
		x = tensor.FromSlice(ints, shape...)
		switch dt {
		case tensor.Int32:
			x = tensor.FromSlice(convert[int32](ints), shape...)
		case tensor.Uint8:
			x = tensor.FromSlice(convert[uint8](ints), shape...)
		}
	}
	if dt.IsFloat() && len(shape) > 0 && r.IntN(4) == 0 { // a 0-d array prints its full value
		c.Precision = r.IntN(6)
	}
	c.x = x.View(shape, nil)
	return c
}

// convert returns v's elements as E.
func convert[E int32 | uint8 | float32, V int64 | float64](v []V) []E {
	out := make([]E, len(v))
	for i, x := range v {
		out[i] = E(x)
	}
	return out
}

// Tensors print as NumPy prints the same arrays (str(), and
// floatmode="fixed" for a %.Nv precision): notation, digits, padding,
// wrapping at 75 columns, summarising beyond 1000 elements.
func TestPrintingAgainstNumPy(t *testing.T) {
	needNumPy(t)
	r := rand.New(rand.NewPCG(3, 5))
	cases := make([]printCase, 2000)
	for i := range cases {
		cases[i] = randomPrintCase(r, i)
	}
	want := runCases(t, "numpy_print.py", cases, func(r *printResult) int { return r.ID })
	failures := 0
	for _, c := range cases {
		got := fmt.Sprintf("%#v", c.x)
		if c.Precision >= 0 {
			got = fmt.Sprintf("%#.*v", c.Precision, c.x)
		}
		if w := want[c.ID]; w == nil || got != w.Text {
			failures++
			if failures <= 8 {
				t.Errorf("case %d, %s%v (precision %d):\n%s\nNumPy:\n%s", c.ID, c.DType, c.Shape, c.Precision, got, w.Text)
			}
		}
	}
	if failures > 8 {
		t.Errorf("%d of %d cases differ", failures, len(cases))
	}
}
