package nn_test

import (
	"bytes"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// ClippedOptimizer scales gradients above the bound to it before the
// inner step and leaves the others, reporting the norm before clipping;
// it refuses what makes no clipping.
func TestClippedOptimizer(t *testing.T) {
	w := tape.NewVariable("w", tensor.FromSlice([]float64{0, 0}))
	b := tape.NewVariable("b", tensor.FromSlice([]float64{0}))
	o := nn.NewClippedOptimizer(&nn.SGD{LR: nn.Constant(1)}, 1)
	if o.Norm() != 0 {
		t.Errorf("the norm before any step: %v", o.Norm())
	}
	// A joint norm of 5 (3, 4 over two variables) is scaled by 1/5.
	if err := o.Apply([]*tape.Variable{w, b}, []*tensor.Tensor{tensor.FromSlice([]float64{3, 0}), tensor.FromSlice([]float64{4})}); err != nil {
		t.Fatal(err)
	}
	if got := append(tensor.ToSlice[float64](w.Value()), tensor.ToSlice[float64](b.Value())...); math.Abs(got[0]+0.6) > 1e-15 || got[1] != 0 || math.Abs(got[2]+0.8) > 1e-15 || o.Norm() != 5 {
		t.Errorf("clipped step: variables %v, norm %v; want [-0.6 0 -0.8], 5", got, o.Norm())
	}
	// Within the bound the gradient is the step.
	if err := o.Apply([]*tape.Variable{w, b}, []*tensor.Tensor{tensor.FromSlice([]float64{0.5, 0}), nil}); err != nil {
		t.Fatal(err)
	}
	if got := tensor.ToSlice[float64](w.Value()); math.Abs(got[0]+1.1) > 1e-15 || o.Norm() != 0.5 || o.Steps() != 2 {
		t.Errorf("step within the bound: w %v, norm %v, %d steps", got, o.Norm(), o.Steps())
	}
	for name, f := range map[string]func(){
		"a bound of 0":                 func() { nn.NewClippedOptimizer(nn.NewAdam(nn.Constant(1)), 0) },
		"a NaN bound":                  func() { nn.NewClippedOptimizer(nn.NewAdam(nn.Constant(1)), math.NaN()) },
		"a loss scale inside the clip": func() { nn.NewClippedOptimizer(nn.NewLossScaleOptimizer(nn.NewAdam(nn.Constant(1))), 1) },
	} {
		if err := tensor.Catch(f); !errors.Is(err, tensor.ErrAttr) {
			t.Errorf("%s: %v, want an attribute error", name, err)
		}
	}
	if err := o.Apply([]*tape.Variable{w}, []*tensor.Tensor{tensor.FromSlice([]float64{1})}); err == nil {
		t.Error("a gradient of another shape: no error")
	}
}

// TrainStep and TracedTrainStep with a ClippedOptimizer take the steps of
// a loop that clips the tape's gradients (ClipByGlobalNormTensor) and applies
// Adam, to the bit eagerly; behind a LossScaleOptimizer, in mixed
// float16, the loop that unscales, clips and applies; and its checkpoint
// restores Adam's slots and steps.
func TestClippedStepsAreTheLoopsSteps(t *testing.T) {
	b := toyBatch()
	loop := func(m *nn.Sequential, opt nn.Optimizer, scale float64) {
		vars := m.Variables()
		tp := tape.New()
		loss := nn.SparseSoftmaxCrossEntropy(m.Forward(b[0]), b[1])
		grads := tp.Gradient(ops.Mul(loss, ops.ScalarLike(loss, scale)), nn.Values(vars)...)
		for i, g := range grads {
			grads[i] = ops.Mul(g, ops.ScalarLike(g, 1/scale))
		}
		clipped, _ := nn.ClipByGlobalNormTensor(grads, 0.5)
		if err := opt.Apply(vars, clipped); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		policy nn.Policy
		wrap   func(nn.Optimizer) nn.Optimizer
		scale  float64
	}{
		{"float32", nn.Policy{}, func(o nn.Optimizer) nn.Optimizer { return nn.NewClippedOptimizer(o, 0.5) }, 1},
		{"mixed float16, loss scaled", nn.MixedFloat16, func(o nn.Optimizer) nn.Optimizer {
			return nn.NewLossScaleOptimizer(nn.NewClippedOptimizer(o, 0.5))
		}, 1 << 15},
	} {
		var models [2]*nn.Sequential
		for k := range models {
			models[k] = mlp(c.policy, &spy{})
			adam := nn.NewAdam(nn.Constant(0.05))
			if k == 1 {
				for range 4 {
					loop(models[k], adam, c.scale)
				}
				continue
			}
			step := nn.TrainStep(models[k], nn.SparseSoftmaxCrossEntropy, c.wrap(adam))
			for range 4 {
				if _, _, err := step(b); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i, v := range models[0].Variables() {
			if !bytes.Equal(v.Value().HostBytes(), models[1].Variables()[i].Value().HostBytes()) {
				t.Errorf("%s: variable %s differs from the loop's", c.name, v.Name())
			}
		}
	}
	// Traced: the same steps to float32's rounding.
	var vals [2][]*tape.Variable
	for k, mk := range []func(nn.Module, nn.Loss, nn.Optimizer) nn.Step{nn.TrainStep, nn.TracedTrainStep} {
		m := mlp(nn.Policy{}, &spy{})
		step := mk(m, nn.SparseSoftmaxCrossEntropy, nn.NewClippedOptimizer(nn.NewAdam(nn.Constant(0.05)), 0.5))
		for range 4 {
			if _, _, err := step(b); err != nil {
				t.Fatal(err)
			}
		}
		vals[k] = m.Variables()
	}
	for i, v := range vals[0] {
		e, tr := tensor.ToSlice[float32](v.Value()), tensor.ToSlice[float32](vals[1][i].Value())
		for j := range e {
			if math.Abs(float64(e[j]-tr[j])) > 1e-5 {
				t.Fatalf("variable %s element %d: eager %g, traced %g", v.Name(), j, e[j], tr[j])
			}
		}
	}
	// A checkpoint through the wrapper holds Adam's state.
	m := mlp(nn.Policy{}, &spy{})
	opt := nn.NewClippedOptimizer(nn.NewAdam(nn.Constant(0.05)), 0.5)
	step := nn.TrainStep(m, nn.SparseSoftmaxCrossEntropy, opt)
	for range 2 {
		if _, _, err := step(b); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "ck.safetensors")
	if err := nn.SaveCheckpoint(path, m.Variables(), opt, nil); err != nil {
		t.Fatal(err)
	}
	fresh := nn.NewClippedOptimizer(nn.NewAdam(nn.Constant(0.05)), 0.5)
	if _, err := nn.RestoreCheckpoint(path, m.Variables(), fresh); err != nil {
		t.Fatal(err)
	}
	if fresh.Steps() != 2 || len(fresh.Slots()) != len(opt.Slots()) {
		t.Fatalf("restored %d steps and %d slots; saved %d and %d", fresh.Steps(), len(fresh.Slots()), opt.Steps(), len(opt.Slots()))
	}
	restored := map[string][]byte{}
	for _, s := range fresh.Slots() {
		restored[s.Name()] = s.Value().HostBytes()
	}
	for _, s := range opt.Slots() {
		if !bytes.Equal(s.Value().HostBytes(), restored[s.Name()]) {
			t.Errorf("slot %s restored differently", s.Name())
		}
	}
}
