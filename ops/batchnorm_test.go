package ops_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// batchNormByOps is BatchNorm spelled out: the output, mean and biased
// variance over every dimension but axis (non-negative).
func batchNormByOps(x, gamma, beta *tensor.Tensor, axis int, eps float64) (y, mean, variance *tensor.Tensor) {
	shape := x.Shape()
	c := x.Dim(axis)
	xv := ops.Reshape(x, shape[:axis].NumElements(), c, shape[axis+1:].NumElements())
	mean = ops.Mean(xv, 0, 2)
	centered := ops.Sub(xv, ops.Reshape(mean, 1, c, 1))
	variance = ops.Mean(ops.Square(centered), 0, 2)
	y = ops.Mul(centered, ops.Reshape(ops.Mul(ops.Rsqrt(ops.Add(variance, ops.ScalarLike(variance, eps))), gamma), 1, c, 1))
	if beta != nil {
		y = ops.Add(y, ops.Reshape(beta, 1, c, 1))
	}
	return ops.Reshape(y, shape...), mean, variance
}

// The fused op equals the ops spelled out, in its three results and in
// the gradients of x, the scale and the offset through all three: features
// last (NHWC), in the middle (NCHW), first (nothing before them), with and
// without an offset, more rows than the kernels' tasks, both dtypes.
func TestBatchNormMatchesOps(t *testing.T) {
	r := tensor.NewRNG(21)
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		tol := map[tensor.DType]float64{tensor.Float64: 1e-11, tensor.Float32: 3e-5}[dt]
		for _, c := range []struct {
			shape []int
			axis  int
		}{{[]int{2, 3, 4, 5}, -1}, {[]int{2, 5, 3, 4}, 1}, {[]int{3, 4, 5, 6}, 1}, {[]int{2, 3, 16}, 1}, {[]int{40, 6}, 1}, {[]int{5, 6}, 0}, {[]int{3, 4, 2}, 2}, {[]int{7}, 0}} {
			for _, offset := range []bool{true, false} {
				name := fmt.Sprintf("%v %v axis %d offset %v", dt, c.shape, c.axis, offset)
				axis := (c.axis + len(c.shape)) % len(c.shape)
				x := ops.Add(ops.Mul(tensor.RandNormal(r, dt, c.shape...), ops.Cast(tensor.Scalar(2.0), dt)), ops.Cast(tensor.Scalar(3.0), dt))
				gamma := tensor.RandNormal(r, dt, c.shape[axis])
				var beta *tensor.Tensor
				watched := []*tensor.Tensor{x, gamma}
				if offset {
					beta = tensor.RandNormal(r, dt, c.shape[axis])
					watched = append(watched, beta)
				}
				wy := tensor.RandUniform(tensor.NewRNG(4), dt, -1, 1, c.shape...)
				ws := tensor.RandUniform(tensor.NewRNG(5), tensor.Float64, -1, 1, 2, c.shape[axis])
				var outs [2][3]*tensor.Tensor
				var grads [2][]*tensor.Tensor
				for j, f := range []func() (y, m, v *tensor.Tensor){
					func() (y, m, v *tensor.Tensor) { return batchNormByOps(x, gamma, beta, axis, 1e-3) },
					func() (y, m, v *tensor.Tensor) { return ops.BatchNorm(x, gamma, beta, c.axis, 1e-3) },
				} {
					tp := tape.New()
					tp.Watch(watched...)
					y, m, v := f()
					outs[j] = [3]*tensor.Tensor{y, m, v}
					loss := ops.Add(ops.Sum(ops.Mul(y, wy)), ops.Cast(ops.Add(
						ops.Sum(ops.Mul(ops.Cast(m, tensor.Float64), ops.Index(ws, 0))),
						ops.Sum(ops.Mul(ops.Cast(v, tensor.Float64), ops.Index(ws, 1)))), dt))
					grads[j] = tp.Gradient(loss, watched...)
				}
				for i, what := range []string{"y", "mean", "variance"} {
					diff(t, name+" "+what, outs[1][i], outs[0][i], tol)
				}
				for j := range grads[0] {
					diff(t, fmt.Sprintf("%s gradient %d", name, j), grads[1][j], grads[0][j], 20*tol)
				}
			}
		}
	}
}

// The op's gradient agrees with finite differences, through the
// statistics too, and the float32 kernel with the float64 one.
func TestBatchNormGradient(t *testing.T) {
	op := eager.Lookup("BatchNorm")
	x := tensor.RandNormal(tensor.NewRNG(2), tensor.Float64, 4, 3, 2)
	gamma, beta := tensor.RandNormal(tensor.NewRNG(3), tensor.Float64, 3), tensor.RandNormal(tensor.NewRNG(7), tensor.Float64, 3)
	wm, wv := tensor.RandNormal(tensor.NewRNG(5), tensor.Float64, 3), tensor.RandNormal(tensor.NewRNG(6), tensor.Float64, 3)
	f := func(xs []*tensor.Tensor) *tensor.Tensor {
		o := eager.Run(op, ops.BatchNormAttrs{Axis: 1, Epsilon: 1e-3}, xs...)
		return ops.Add(ops.Add(ops.Sum(ops.Square(o[0])), ops.Sum(ops.Mul(o[1], wm))), ops.Sum(ops.Mul(o[2], wv)))
	}
	if res := tape.CheckGradient(f, []*tensor.Tensor{x, gamma, beta}, 1e-6); res.MaxError > 1e-6 {
		t.Errorf("%v", res)
	}
	grad := func(dt tensor.DType) *tensor.Tensor {
		c := func(v *tensor.Tensor) *tensor.Tensor { return ops.Cast(v, dt) }
		xd := c(x)
		tp := tape.New()
		tp.Watch(xd)
		o := eager.Run(op, ops.BatchNormAttrs{Axis: 1, Epsilon: 1e-3}, xd, c(gamma), c(beta))
		l := ops.Add(ops.Add(ops.Sum(ops.Square(o[0])), ops.Sum(ops.Mul(o[1], c(wm)))), ops.Sum(ops.Mul(o[2], c(wv))))
		return ops.Cast(tp.Gradient(l, xd)[0], tensor.Float64)
	}
	diff(t, "float32 gradient", grad(tensor.Float32), grad(tensor.Float64), 1e-4)
}

// Half inputs are normalized in float32 and rounded once; the statistics
// are float32.
func TestBatchNormHalf(t *testing.T) {
	x := tensor.RandNormal(tensor.NewRNG(1), tensor.Float32, 6, 4, 3)
	gamma, beta := tensor.RandNormal(tensor.NewRNG(2), tensor.Float32, 3), tensor.RandNormal(tensor.NewRNG(3), tensor.Float32, 3)
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		h := func(v *tensor.Tensor) *tensor.Tensor { return ops.Cast(v, dt) }
		w := func(v *tensor.Tensor) *tensor.Tensor { return ops.Cast(h(v), tensor.Float32) }
		y, m, v := ops.BatchNorm(h(x), h(gamma), h(beta), -1, 1e-3)
		if y.DType() != dt || m.DType() != tensor.Float32 || v.DType() != tensor.Float32 {
			t.Fatalf("%v: results %v, %v, %v", dt, y.DType(), m.DType(), v.DType())
		}
		wy, wm, wv := ops.BatchNorm(w(x), w(gamma), w(beta), -1, 1e-3)
		diff(t, fmt.Sprint(dt, " y"), ops.Cast(y, tensor.Float64), ops.Cast(h(wy), tensor.Float64), 0)
		diff(t, fmt.Sprint(dt, " mean"), m, wm, 0)
		diff(t, fmt.Sprint(dt, " variance"), v, wv, 0)
	}
}

// A half x with float32 parameters (mixed precision's norms) is the
// float32 BatchNorm of the widened x, y rounded once to the half type
// (within a rounding: the float32 route rounds twice), the statistics
// and the parameters' gradients float32; NHWC and NCHW, with and without
// an offset; float16 parameters of a bfloat16 x are refused.
func TestBatchNormHalfWithFloat32Parameters(t *testing.T) {
	r := tensor.NewRNG(8)
	for _, c := range []struct {
		shape []int
		axis  int
		beta  bool
	}{{[]int{6, 4, 3}, -1, true}, {[]int{3, 5, 4, 2}, 1, false}} {
		x := tensor.RandNormal(r, tensor.Float32, c.shape...)
		ch := x.Dim(c.axis)
		gamma, beta := tensor.RandNormal(r, tensor.Float32, ch), tensor.RandNormal(r, tensor.Float32, ch)
		if !c.beta {
			beta = nil
		}
		for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
			dy := ops.Cast(ops.Cast(tensor.RandNormal(r, tensor.Float32, c.shape...), dt), tensor.Float32)
			run := func(x *tensor.Tensor) []*tensor.Tensor {
				tp := tape.New()
				watched := []*tensor.Tensor{x, gamma}
				if beta != nil {
					watched = append(watched, beta)
				}
				tp.Watch(watched...)
				y, m, v := ops.BatchNorm(x, gamma, beta, c.axis, 1e-3)
				g := tp.Gradient(ops.Sum(ops.Mul(ops.Cast(y, tensor.Float32), dy)), watched...)
				return append([]*tensor.Tensor{y, m, v}, g...)
			}
			h := ops.Cast(x, dt)
			got, want := run(h), run(ops.Cast(h, tensor.Float32))
			what := fmt.Sprintf("%v axis %d", dt, c.axis)
			if got[0].DType() != dt || got[1].DType() != tensor.Float32 || got[3].DType() != dt || got[4].DType() != tensor.Float32 {
				t.Fatalf("%s: y %v, mean %v, dx %v, dgamma %v", what, got[0].DType(), got[1].DType(), got[3].DType(), got[4].DType())
			}
			ulp := map[tensor.DType]float64{tensor.BFloat16: 1.0 / 128, tensor.Float16: 1.0 / 1024}[dt]
			for _, i := range []int{0, 3} { // y and dx, a rounding apart at most
				g, w := tensor.ToSlice[float32](ops.Cast(got[i], tensor.Float32)), tensor.ToSlice[float32](ops.Cast(ops.Cast(want[i], dt), tensor.Float32))
				for j := range w {
					if d := math.Abs(float64(g[j] - w[j])); d > math.Abs(float64(w[j]))*ulp+1e-6 {
						t.Fatalf("%s output %d, element %d: %v, want %v within a rounding", what, i, j, g[j], w[j])
					}
				}
			}
			for _, i := range []int{1, 2, 4, 5} { // the statistics and the parameters' gradients
				if i < len(got) {
					diff(t, fmt.Sprintf("%s output %d", what, i), ops.Cast(got[i], tensor.Float64), ops.Cast(want[i], tensor.Float64), 1e-5)
				}
			}
		}
	}
	x := ops.Cast(tensor.RandNormal(r, tensor.Float32, 4, 3), tensor.BFloat16)
	err := tensor.Catch(func() { ops.BatchNorm(x, tensor.Ones(tensor.Float16, 3), nil, -1, 1e-3) })
	if !errors.Is(err, tensor.ErrDType) {
		t.Errorf("float16 parameters of a bfloat16 x: %v, want ErrDType", err)
	}
}

func TestBatchNormBadInputs(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 2, 3, 4)
	g := tensor.Ones(tensor.Float32, 4)
	for _, c := range []struct {
		name string
		f    func()
		want error
		text string
	}{
		{"axis past the rank", func() { ops.BatchNorm(x, g, nil, 3, 1e-3) }, tensor.ErrAttr, "axis 3"},
		{"axis before the first", func() { ops.BatchNorm(x, g, nil, -4, 1e-3) }, tensor.ErrAttr, "axis -4 is outside x's 3 dimensions [2 3 4]"},
		{"scale of another axis", func() { ops.BatchNorm(x, g, nil, 1, 1e-3) }, tensor.ErrShape, "[3]"},
		{"offset of another dtype", func() { ops.BatchNorm(x, g, tensor.Zeros(tensor.Float64, 4), -1, 1e-3) }, tensor.ErrDType, "float64"},
		{"a scalar", func() { ops.BatchNorm(tensor.Scalar(float32(1)), g, nil, 0, 1e-3) }, tensor.ErrAttr, "outside"},
		{"integers", func() { ops.BatchNorm(tensor.Zeros(tensor.Int32, 2, 4), tensor.Ones(tensor.Int32, 4), nil, -1, 1e-3) }, tensor.ErrDType, "int32"},
		{"nil scale", func() { ops.BatchNorm(x, nil, nil, -1, 1e-3) }, tensor.ErrArity, "input 1 is nil"},
	} {
		err := tensor.Catch(c.f)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %v mentioning %q", c.name, err, c.want, c.text)
		}
	}
}

// A feature of one element normalizes to the offset whatever it holds, so
// its gradient is exactly zero; a batch of nothing has NaN statistics, as
// the mean of nothing is, and zero gradients of the scale and offset.
func TestBatchNormEdges(t *testing.T) {
	x := tensor.FromSlice([]float64{0.3, -1.7, 12.5}, 1, 3)
	gamma, w := tensor.FromSlice([]float64{0.9, 1.1, -2}), tensor.FromSlice([]float64{1.3, -0.4, 0.7}, 1, 3)
	tp := tape.New()
	tp.Watch(x)
	y, _, _ := ops.BatchNorm(x, gamma, nil, -1, 1e-5)
	for i, v := range tensor.ToSlice[float64](tp.Gradient(ops.Sum(ops.Mul(y, w)), x)[0]) {
		if v != 0 {
			t.Errorf("element %d of the gradient is %g, want exactly 0", i, v)
		}
	}
	empty := tensor.Zeros(tensor.Float64, 0, 3)
	tp = tape.New()
	tp.Watch(empty, gamma)
	y, m, _ := ops.BatchNorm(empty, gamma, nil, -1, 1e-5)
	if got := tensor.ToSlice[float64](m); !isNaN(got[0]) {
		t.Errorf("the mean of nothing is %v, want NaN", got)
	}
	g := tp.Gradient(ops.Sum(y), gamma)[0]
	if got := tensor.ToSlice[float64](g); got[0] != 0 || got[1] != 0 || got[2] != 0 {
		t.Errorf("the scale's gradient over nothing is %v, want zeros", got)
	}
}

func isNaN(v float64) bool { return v != v }

// No features, or no batch, in float32 and float64, features last and
// not: empty results, no panic (the fuzzer's first find: a tile of no
// features divided by zero).
func TestBatchNormEmpty(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, c := range []struct {
			shape []int
			axis  int
		}{{[]int{0, 0}, 1}, {[]int{4, 0}, 1}, {[]int{2, 0, 20}, 1}, {[]int{0, 3}, 1}, {[]int{2, 3, 0}, 1}} {
			x := tensor.Zeros(dt, c.shape...)
			g := tensor.Ones(dt, c.shape[c.axis])
			err := tensor.Catch(func() {
				tp := tape.New()
				tp.Watch(x, g)
				y, m, v := ops.BatchNorm(x, g, g, c.axis, 1e-3)
				if !y.Shape().Equal(x.Shape()) || m.Dim(0) != c.shape[c.axis] || v.Dim(0) != c.shape[c.axis] {
					t.Errorf("%v %v: results %v %v %v", dt, c.shape, y.Shape(), m.Shape(), v.Shape())
				}
				tp.Gradient(ops.Sum(y), x, g)
			})
			if err != nil {
				t.Errorf("%v %v axis %d: %v", dt, c.shape, c.axis, err)
			}
		}
	}
}

// A float32 feature of equal values normalizes to exactly beta, with
// exactly their mean and variance 0, and gives its scale exactly no
// gradient, in either layout the vector kernels take (their float32
// first pass missed the mean by an ulp: NCHW rows of 1/3 gave a scale
// gradient of 3e-5 where it is 0).
func TestBatchNormOfEqualValuesIsExact(t *testing.T) {
	for _, axis := range []int{1, 3} {
		shape := []int{8, 3, 20, 20}
		if axis == 3 {
			shape = []int{8, 20, 20, 3}
		}
		for _, v := range []float32{1.0 / 3, -1000.7, 7e-5} {
			x := ops.Mul(tensor.Ones(tensor.Float32, shape...), tensor.Scalar(v))
			gamma, beta := tensor.FromSlice([]float32{1.5, 0.5, 2}, 3), tensor.FromSlice([]float32{0.1, 0.2, 0.3}, 3)
			tp := tape.New()
			tp.Watch(gamma)
			y, mean, variance := ops.BatchNorm(x, gamma, beta, axis, 1e-3)
			dg := tp.Gradient(ops.Sum(ops.Mul(y, tensor.RandUniform(tensor.NewRNG(1), tensor.Float32, -1, 1, shape...))), gamma)[0]
			ys, bs := tensor.ToSlice[float32](ops.Transpose(ops.Reshape(y, -1, 3), 1, 0)), tensor.ToSlice[float32](beta)
			if axis == 1 {
				ys = tensor.ToSlice[float32](ops.Reshape(ops.Transpose(y, 1, 0, 2, 3), 3, -1))
			}
			per := len(ys) / 3
			for i, got := range ys {
				if got != bs[i/per] {
					t.Fatalf("axis %d, values %v: y element %d = %v, want beta's %v", axis, v, i, got, bs[i/per])
				}
			}
			for f := range 3 {
				if m, s, g := tensor.ToSlice[float32](mean)[f], tensor.ToSlice[float32](variance)[f], tensor.ToSlice[float32](dg)[f]; m != v || s != 0 || g != 0 {
					t.Errorf("axis %d, values %v, feature %d: mean %v, variance %v, the scale's gradient %v; want %v, 0, 0", axis, v, f, m, s, g, v)
				}
			}
		}
	}
}
