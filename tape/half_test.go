package tape_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A float variable cast to a half type is kept: a second Cast of the
// unchanged variable shares the first's buffer (no kernel), either may be
// released without harming the other, and both hold the cast of the
// value; an assignment makes the next Cast compute the new value's. A
// cast to another float type, or of a value that is no variable, is not
// kept. The gradient through a kept cast reaches the variable as
// through any.
func TestCastOfAVariableIsKept(t *testing.T) {
	for _, h := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		v := tape.NewVariable("w", tensor.FromSlice([]float32{1.0001, -2.5, 3e-6, 65504.7}))
		want := func() []byte { return ops.Cast(ops.Identity(v.Value()), h).HostBytes() }
		a := ops.Cast(v.Value(), h)
		b := ops.Cast(v.Value(), h)
		if a == b || a.Buffer() != b.Buffer() {
			t.Fatalf("%v: two casts of an unchanged variable: want two tensors over one buffer", h)
		}
		if !bytes.Equal(a.HostBytes(), want()) {
			t.Fatalf("%v: the kept cast is not the value's cast", h)
		}
		a.Release()
		if !bytes.Equal(b.HostBytes(), want()) {
			t.Fatalf("%v: releasing one cast changed the other", h)
		}
		v.Assign(tensor.FromSlice([]float32{7, 8, 9, 10}))
		c := ops.Cast(v.Value(), h)
		if c.Buffer() == b.Buffer() || !bytes.Equal(c.HostBytes(), want()) {
			t.Fatalf("%v: the cast after an assignment is not the new value's", h)
		}
		if got := tensor.ToSlice[float32](ops.Cast(b, tensor.Float32)); got[0] == 7 {
			t.Fatalf("%v: the cast taken before the assignment changed", h)
		}
		if d := ops.Cast(v.Value(), tensor.Float64); d.Buffer() == ops.Cast(v.Value(), tensor.Float64).Buffer() {
			t.Errorf("a cast to float64 is kept")
		}
		x := ops.Identity(v.Value())
		if ops.Cast(x, h).Buffer() == ops.Cast(x, h).Buffer() {
			t.Errorf("%v: a cast of a tensor that is no variable is kept", h)
		}
		tp := tape.New()
		y := ops.Sum(ops.Square(ops.Cast(ops.Cast(v.Value(), h), tensor.Float32)))
		g := tp.Gradient(y, v.Value())[0]
		if got := tensor.ToSlice[float32](g); g.DType() != tensor.Float32 || got[0] != 14 || got[3] != 20 {
			t.Errorf("%v: the gradient through a kept cast is %v %v, want float32 [14 16 18 20]", h, g.DType(), got)
		}
	}
}

// With HalfGradients, a variable read only through one Cast to a half
// type gets its gradient in that type, which widened is the gradient a
// plain tape gives to the bit; a variable read also directly, or through
// two casts, or cast to float64, gets the plain gradient.
func TestHalfGradients(t *testing.T) {
	r := tensor.NewRNG(41)
	x := tensor.RandNormal(r, tensor.Float32, 8, 5)
	for _, h := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		for _, c := range []struct {
			name string
			f    func(w *tensor.Tensor) *tensor.Tensor
			half bool
		}{
			{"a product", func(w *tensor.Tensor) *tensor.Tensor {
				return ops.Cast(ops.Tanh(ops.MatMul(ops.Cast(x, h), ops.Cast(w, h))), tensor.Float32)
			}, true},
			{"two casts", func(w *tensor.Tensor) *tensor.Tensor {
				return ops.Cast(ops.Mul(ops.Cast(w, h), ops.Sin(ops.Cast(w, h))), tensor.Float32)
			}, false},
			{"a cast and a direct read", func(w *tensor.Tensor) *tensor.Tensor {
				return ops.Add(ops.Cast(ops.Square(ops.Cast(w, h)), tensor.Float32), w)
			}, false},
			{"a cast to float64", func(w *tensor.Tensor) *tensor.Tensor { return ops.Square(ops.Cast(w, tensor.Float64)) }, false},
		} {
			w := tape.NewVariable("w", tensor.RandNormal(r, tensor.Float32, 5, 5))
			grad := func(opts tape.Options) *tensor.Tensor {
				tp := tape.New(opts)
				return tp.Gradient(ops.Sum(c.f(w.Value())), w.Value())[0]
			}
			plain, half := grad(tape.Options{}), grad(tape.Options{HalfGradients: true})
			wantDType := tensor.Float32
			if c.half {
				wantDType = h
			}
			if half.DType() != wantDType {
				t.Errorf("%v, %s: the gradient is %v, want %v", h, c.name, half.DType(), wantDType)
			}
			if !bytes.Equal(ops.Cast(half, tensor.Float32).HostBytes(), plain.HostBytes()) {
				t.Errorf("%v, %s: the gradient widened is not the plain tape's", h, c.name)
			}
		}
	}
	// GradientEach hands on the half gradient.
	w := tape.NewVariable("w", tensor.RandNormal(r, tensor.Float32, 5, 5))
	tp := tape.New(tape.Options{HalfGradients: true})
	y := ops.Sum(ops.MatMul(ops.Cast(x, tensor.BFloat16), ops.Cast(w.Value(), tensor.BFloat16)))
	var handed *tensor.Tensor
	tp.GradientEach(y, nil, []*tensor.Tensor{w.Value()}, func(_ int, g *tensor.Tensor) { handed = g })
	if handed == nil || handed.DType() != tensor.BFloat16 {
		t.Errorf("GradientEach handed %v, want a bfloat16 gradient", tensor.Describe(handed))
	}
}

// The fused steps take a half gradient of a float variable as its
// widening (on the host, widened first), bit for bit, for every rule;
// a half gradient of a half variable of the other type, or of an
// integer type, is refused, changing nothing.
func TestFusedStepsTakeHalfGradients(t *testing.T) {
	r := tensor.NewRNG(42)
	rules := stepRules()
	adam := ops.AdamParams{LR: 0.003, Beta1: 0.9, Beta2: 0.999, C1: 0.1, C2: 0.001, Eps: 1e-7}
	rules = append(rules, stepRule{name: "Adam", slots: 2, fused: func(vars []*tape.Variable, slots [][]*tape.Variable, grads []*tensor.Tensor) []bool {
		return tape.AdamUpdateAll(vars, slots[0], slots[1], grads, adam)
	}})
	for _, rule := range rules {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			for _, h := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
				var vars [2][]*tape.Variable
				var slots [2][][]*tape.Variable
				for k := range vars {
					x := tensor.RandNormal(tensor.NewRNG(43), dt, 9)
					vars[k] = []*tape.Variable{tape.NewVariable("w", x)}
					for s := range rule.slots {
						slots[k] = append(slots[k], []*tape.Variable{tape.NewVariable(fmt.Sprint("s", s), ops.Abs(x))})
					}
				}
				for step := range 2 {
					g := ops.Cast(tensor.RandNormal(r, tensor.Float32, 9), h)
					rule.fused(vars[0], slots[0], []*tensor.Tensor{g})
					rule.fused(vars[1], slots[1], []*tensor.Tensor{ops.Cast(g, dt)})
					if !bytes.Equal(vars[0][0].Value().HostBytes(), vars[1][0].Value().HostBytes()) {
						t.Fatalf("%s %v from %v, step %d: the value differs from the widened gradient's step", rule.name, dt, h, step)
					}
				}
			}
		}
	}
	w := tape.NewVariable("w", tensor.FromSlice([]float32{1, 2}))
	vel := tape.NewVariable("vel", tensor.Zeros(tensor.Float32, 2))
	p := ops.MomentumParams{LR: 0.1, Momentum: 0.9}
	hw := tape.NewVariable("hw", ops.Cast(tensor.FromSlice([]float32{1, 2}), tensor.Float16))
	hvel := tape.NewVariable("hvel", tensor.Zeros(tensor.Float16, 2))
	for what, run := range map[string]func(){
		"an int32 gradient of a float32 variable": func() {
			tape.MomentumUpdateAll([]*tape.Variable{w}, []*tape.Variable{vel}, []*tensor.Tensor{tensor.FromSlice([]int32{1, 1})}, p)
		},
		"a bfloat16 gradient of a float16 variable": func() {
			tape.MomentumUpdateAll([]*tape.Variable{hw}, []*tape.Variable{hvel}, []*tensor.Tensor{ops.Cast(tensor.FromSlice([]float32{1, 1}), tensor.BFloat16)}, p)
		},
	} {
		if err := tensor.Catch(run); !errors.Is(err, tensor.ErrDType) {
			t.Errorf("%s: %v, want ErrDType", what, err)
		}
	}
	if got := tensor.ToSlice[float32](w.Value()); got[0] != 1 || got[1] != 2 {
		t.Errorf("the variable changed: %v", got)
	}
}

// A half variable's gradient of its own dtype takes the path it always
// took (the steps in ops, the fused host kernels being float32's and
// float64's), the gradient left as the caller gave it.
func TestHalfVariablesStepAsBefore(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		w := tape.NewVariable("w", ops.Cast(tensor.FromSlice([]float32{1, 2}), dt))
		vel := tape.NewVariable("vel", tensor.Zeros(dt, 2))
		g := ops.Cast(tensor.FromSlice([]float32{0.5, -0.5}), dt)
		done := tape.MomentumUpdateAll([]*tape.Variable{w}, []*tape.Variable{vel}, []*tensor.Tensor{g}, ops.MomentumParams{LR: 0.1, Momentum: 0.9})
		if done[0] {
			t.Errorf("%v: a half variable was stepped by a fused kernel", dt)
		}
		var first float32
		if err := tensor.Catch(func() { first = tensor.ToSlice[float32](ops.Cast(g, tensor.Float32))[0] }); err != nil || first != 0.5 {
			t.Errorf("%v: the caller's gradient was released or changed: %v", dt, err)
		}
	}
}
