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

// normByOps is LayerNorm (or RMSNorm) spelled out.
func normByOps(x, gamma, beta *tensor.Tensor, eps float64, rms bool) *tensor.Tensor {
	keep := ops.Reduction{Kind: ops.ReduceMean, Dims: []int{-1}, KeepDims: true}
	c := x
	if !rms {
		c = ops.Sub(x, ops.Reduce(x, keep))
	}
	v := ops.Reduce(ops.Square(c), keep)
	y := ops.Mul(ops.Mul(c, ops.Rsqrt(ops.Add(v, ops.ScalarLike(v, eps)))), gamma)
	if beta != nil {
		y = ops.Add(y, beta)
	}
	return y
}

// The fused norms equal the ops spelled out, in value and in the
// gradients of x, the scale and the offset: both forms, with and without
// an offset, rows fewer and more than the backward's tasks, both dtypes.
func TestNormsMatchOps(t *testing.T) {
	r := tensor.NewRNG(8)
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		tol := map[tensor.DType]float64{tensor.Float64: 1e-12, tensor.Float32: 2e-5}[dt]
		for _, shape := range [][]int{{5}, {3, 7}, {4, 9, 33}} {
			for _, form := range []string{"layer", "layer without offset", "rms"} {
				name := fmt.Sprintf("%v %v %s", dt, shape, form)
				c := shape[len(shape)-1]
				x := ops.Add(tensor.RandNormal(r, dt, shape...), ops.Cast(tensor.Scalar(3.0), dt))
				gamma := tensor.RandNormal(r, dt, c)
				var beta *tensor.Tensor
				if form == "layer" {
					beta = tensor.RandNormal(r, dt, c)
				}
				rms := form == "rms"
				fused := func() *tensor.Tensor {
					if rms {
						return ops.RMSNorm(x, gamma, 1e-5)
					}
					return ops.LayerNorm(x, gamma, beta, 1e-5)
				}
				var outs [2]*tensor.Tensor
				var grads [2][]*tensor.Tensor
				for j, f := range []func() *tensor.Tensor{func() *tensor.Tensor { return normByOps(x, gamma, beta, 1e-5, rms) }, fused} {
					tp := tape.New()
					watched := []*tensor.Tensor{x, gamma}
					if beta != nil {
						watched = append(watched, beta)
					}
					tp.Watch(watched...)
					outs[j] = f()
					w := tensor.RandUniform(tensor.NewRNG(4), dt, -1, 1, outs[j].Shape()...)
					grads[j] = tp.Gradient(ops.Sum(ops.Mul(outs[j], w)), watched...)
				}
				diff(t, name+" value", outs[1], outs[0], tol)
				for j := range grads[0] {
					diff(t, fmt.Sprintf("%s gradient %d", name, j), grads[1][j], grads[0][j], 10*tol)
				}
			}
		}
	}
}

// The op's statistics are outputs a graph may differentiate through: the
// gradient of a loss reading the mean and reciprocal deviation agrees
// with finite differences.
func TestLayerNormStatisticsGradient(t *testing.T) {
	op := eager.Lookup("LayerNorm")
	for _, rms := range []bool{false, true} {
		x := tensor.RandNormal(tensor.NewRNG(2), tensor.Float64, 3, 6)
		gamma := tensor.RandNormal(tensor.NewRNG(3), tensor.Float64, 6)
		wm := tensor.RandNormal(tensor.NewRNG(5), tensor.Float64, 3)
		wr := tensor.RandNormal(tensor.NewRNG(6), tensor.Float64, 3)
		f := func(xs []*tensor.Tensor) *tensor.Tensor {
			o := eager.Run(op, ops.NormAttrs{Epsilon: 1e-3, RMS: rms}, xs[0], gamma)
			return ops.Add(ops.Add(ops.Sum(ops.Square(o[0])), ops.Sum(ops.Mul(o[1], wm))), ops.Sum(ops.Mul(o[2], wr)))
		}
		if res := tape.CheckGradient(f, []*tensor.Tensor{x}, 1e-6); res.MaxError > 1e-6 {
			t.Errorf("rms=%v: %v", rms, res)
		}
		// The float32 kernel (a path of its own) agrees with float64's.
		grad := func(dt tensor.DType) *tensor.Tensor {
			c := func(v *tensor.Tensor) *tensor.Tensor { return ops.Cast(v, dt) }
			xd := c(x)
			tp := tape.New()
			tp.Watch(xd)
			o := eager.Run(op, ops.NormAttrs{Epsilon: 1e-3, RMS: rms}, xd, c(gamma))
			l := ops.Add(ops.Add(ops.Sum(ops.Square(o[0])), ops.Sum(ops.Mul(o[1], c(wm)))), ops.Sum(ops.Mul(o[2], c(wr))))
			return ops.Cast(tp.Gradient(l, xd)[0], tensor.Float64)
		}
		diff(t, fmt.Sprintf("rms=%v float32 statistics' gradient", rms), grad(tensor.Float32), grad(tensor.Float64), 1e-4)
	}
}

// Half inputs are normalized in float32 and rounded once.
func TestNormHalf(t *testing.T) {
	x := tensor.RandNormal(tensor.NewRNG(1), tensor.Float32, 4, 16)
	gamma, beta := tensor.RandNormal(tensor.NewRNG(2), tensor.Float32, 16), tensor.RandNormal(tensor.NewRNG(3), tensor.Float32, 16)
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		h := func(v *tensor.Tensor) *tensor.Tensor { return ops.Cast(v, dt) }
		got := ops.LayerNorm(h(x), h(gamma), h(beta), 1e-5)
		if got.DType() != dt {
			t.Fatalf("%v: result is %v", dt, got.DType())
		}
		want := h(ops.LayerNorm(ops.Cast(h(x), tensor.Float32), ops.Cast(h(gamma), tensor.Float32), ops.Cast(h(beta), tensor.Float32), 1e-5))
		diff(t, fmt.Sprint(dt), ops.Cast(got, tensor.Float64), ops.Cast(want, tensor.Float64), 0)
	}
}

// A half x with float32 parameters (mixed precision's norms) computes as
// the float32 norm of the widened x rounded once to the half type, and
// its gradients are the float32 norm's: dx rounded to the half type
// (within one rounding: the float32 route rounds twice), the
// parameters' in float32, to float32's precision. LayerNorm with and
// without an offset, RMSNorm.
func TestNormHalfWithFloat32Parameters(t *testing.T) {
	r := tensor.NewRNG(7)
	x := tensor.RandNormal(r, tensor.Float32, 6, 40)
	gamma, beta := tensor.RandNormal(r, tensor.Float32, 40), tensor.RandNormal(r, tensor.Float32, 40)
	dy := tensor.RandNormal(r, tensor.Float32, 6, 40)
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		for _, form := range []string{"layer", "scale only", "rms"} {
			norm := func(x, g, b *tensor.Tensor) *tensor.Tensor {
				switch form {
				case "layer":
					return ops.LayerNorm(x, g, b, 1e-5)
				case "scale only":
					return ops.LayerNorm(x, g, nil, 1e-5)
				}
				return ops.RMSNorm(x, g, 1e-5)
			}
			h := ops.Cast(x, dt)
			dy := ops.Cast(ops.Cast(dy, dt), tensor.Float32) // the half y's gradient: of its dtype either way
			run := func(x *tensor.Tensor) []*tensor.Tensor {
				tp := tape.New()
				tp.Watch(x, gamma, beta)
				y := norm(x, gamma, beta)
				g := tp.Gradient(ops.Sum(ops.Mul(ops.Cast(y, tensor.Float32), dy)), x, gamma, beta)
				return append([]*tensor.Tensor{y}, g...)
			}
			got, want := run(h), run(ops.Cast(h, tensor.Float32))
			what := fmt.Sprintf("%v %s", dt, form)
			if got[0].DType() != dt || got[1].DType() != dt || got[2].DType() != tensor.Float32 {
				t.Fatalf("%s: y %v, dx %v, dgamma %v", what, got[0].DType(), got[1].DType(), got[2].DType())
			}
			ulp := map[tensor.DType]float64{tensor.BFloat16: 1.0 / 128, tensor.Float16: 1.0 / 1024}[dt]
			for i, name := range []string{"y", "dx"} {
				g, w := tensor.ToSlice[float32](ops.Cast(got[i], tensor.Float32)), tensor.ToSlice[float32](ops.Cast(ops.Cast(want[i], dt), tensor.Float32))
				for j := range w {
					if d := math.Abs(float64(g[j] - w[j])); d > math.Abs(float64(w[j]))*ulp+1e-6 {
						t.Fatalf("%s %s[%d]: %v, want %v within a rounding", what, name, j, g[j], w[j])
					}
				}
			}
			for i, name := range []string{"dgamma", "dbeta"} {
				if got[2+i] == nil || want[2+i] == nil {
					if (got[2+i] == nil) != (want[2+i] == nil) {
						t.Fatalf("%s %s: %v, want %v", what, name, got[2+i], want[2+i])
					}
					continue
				}
				diff(t, what+" "+name, ops.Cast(got[2+i], tensor.Float64), ops.Cast(want[2+i], tensor.Float64), 1e-5)
			}
		}
	}
	bad := []struct {
		name string
		f    func()
	}{
		{"float16 parameters of a bfloat16 x", func() {
			ops.LayerNorm(ops.Cast(x, tensor.BFloat16), ops.Cast(gamma, tensor.Float16), ops.Cast(beta, tensor.Float16), 1e-5)
		}},
		{"float64 parameters of a bfloat16 x", func() {
			ops.RMSNorm(ops.Cast(x, tensor.BFloat16), ops.Cast(gamma, tensor.Float64), 1e-5)
		}},
		{"a float32 scale and a bfloat16 offset", func() {
			ops.LayerNorm(ops.Cast(x, tensor.BFloat16), gamma, ops.Cast(beta, tensor.BFloat16), 1e-5)
		}},
		{"float32 parameters of a float64 x", func() { ops.LayerNorm(ops.Cast(x, tensor.Float64), gamma, beta, 1e-5) }},
	}
	for _, c := range bad {
		if err := tensor.Catch(c.f); !errors.Is(err, tensor.ErrDType) {
			t.Errorf("%s: %v, want ErrDType", c.name, err)
		}
	}
}

func TestNormBadInputs(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 2, 4)
	g := tensor.Ones(tensor.Float32, 4)
	for _, c := range []struct {
		name string
		f    func()
		want error
		text string
	}{
		{"scale of another size", func() { ops.LayerNorm(x, tensor.Ones(tensor.Float32, 3), nil, 1e-5) }, tensor.ErrShape, "[4]"},
		{"offset of another dtype", func() { ops.LayerNorm(x, g, tensor.Zeros(tensor.Float64, 4), 1e-5) }, tensor.ErrDType, "float64"},
		{"a scalar", func() { ops.RMSNorm(tensor.Scalar(float32(1)), g, 1e-5) }, tensor.ErrRank, "scalar"},
		{"integers", func() { ops.RMSNorm(tensor.Zeros(tensor.Int32, 2, 4), tensor.Ones(tensor.Int32, 4), 1e-5) }, tensor.ErrDType, "int32"},
		{"nil scale", func() { ops.LayerNorm(x, nil, nil, 1e-5) }, tensor.ErrArity, "input 1 is nil"},
	} {
		err := tensor.Catch(c.f)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %v mentioning %q", c.name, err, c.want, c.text)
		}
	}
}

// A row of one element normalizes to zero whatever it holds, so its
// gradient is exactly zero (float64 rounding left 1e-14, which an
// l2_normalize after it blew up to 1e-8: the differential suite's seed
// 613).
func TestLayerNormOfOneElementHasZeroGradient(t *testing.T) {
	x := tensor.FromSlice([]float64{0.3, -1.7, 12.5}, 3, 1)
	gamma := tensor.FromSlice([]float64{0.9})
	w := tensor.FromSlice([]float64{1.3, -0.4, 0.7}, 3, 1)
	tp := tape.New()
	tp.Watch(x)
	g := tp.Gradient(ops.Sum(ops.Mul(ops.LayerNorm(x, gamma, nil, 1e-5), w)), x)[0]
	for i, v := range tensor.ToSlice[float64](g) {
		if v != 0 {
			t.Errorf("element %d of the gradient is %g, want exactly 0", i, v)
		}
	}
}

// A float32 row of equal values normalizes to exactly beta and gives its
// scale exactly no gradient, at any width the vector kernels take (their
// float32 mean missed the value by an ulp, which 1/√eps magnified into a
// gradient of 1e-3: the differential suite's programs at size, seed 205).
func TestLayerNormOfEqualValuesIsExact(t *testing.T) {
	for _, n := range []int{3, 23, 64, 1000} {
		for _, v := range []float32{0.1, 1.0 / 3, -1000.7, 7e-5} {
			row := make([]float32, 2*n)
			for i := range row {
				row[i] = v
			}
			x := tensor.FromSlice(row, 2, n)
			gamma := tensor.RandUniform(tensor.NewRNG(1), tensor.Float32, 0.5, 1.5, n)
			beta := tensor.RandUniform(tensor.NewRNG(2), tensor.Float32, -1, 1, n)
			tp := tape.New()
			tp.Watch(gamma)
			y := ops.LayerNorm(x, gamma, beta, 1e-3)
			dg := tp.Gradient(ops.Sum(ops.Mul(y, tensor.RandUniform(tensor.NewRNG(3), tensor.Float32, -1, 1, 2, n))), gamma)[0]
			want := tensor.ToSlice[float32](beta)
			for i, got := range tensor.ToSlice[float32](y) {
				if got != want[i%n] {
					t.Fatalf("n %d, rows of %v: y[%d] = %v, want beta's %v", n, v, i, got, want[i%n])
				}
			}
			for i, got := range tensor.ToSlice[float32](dg) {
				if got != 0 {
					t.Fatalf("n %d, rows of %v: the scale's gradient [%d] = %v, want 0", n, v, i, got)
				}
			}
		}
	}
}
