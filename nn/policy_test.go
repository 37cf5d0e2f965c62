package nn_test

import (
	"bytes"
	"math"
	"path/filepath"
	"testing"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// spy records the dtype of what flows through it.
type spy struct{ seen []tensor.DType }

func (s *spy) Forward(x *tensor.Tensor) *tensor.Tensor {
	s.seen = append(s.seen, x.DType())
	return x
}
func (s *spy) Variables() []*tape.Variable { return nil }

// toyBatch is a classification batch: 64 points of 8 features, labelled by
// the sign of their first feature plus the second.
func toyBatch() data.Element {
	x := tensor.RandUniform(tensor.NewRNG(9), tensor.Float32, -1, 1, 64, 8)
	v := tensor.ToSlice[float32](x)
	y := make([]int64, 64)
	for i := range y {
		if v[8*i]+v[8*i+1] > 0 {
			y[i] = 1
		}
	}
	return data.Element{x, tensor.FromSlice(y)}
}

// mlp is a small classifier whose layers a spy watches.
func mlp(p nn.Policy, s *spy) *nn.Sequential {
	r := tensor.NewRNG(3)
	m := nn.NewSequential(nn.NewDense("a", r, 8, 32, nn.DenseOpts{Activation: ops.Relu}), s,
		nn.NewLayerNorm("norm", 32, tensor.Float32), nn.NewDense("b", r, 32, 2, nn.DenseOpts{}))
	m.Policy = p
	return m
}

// Under MixedBFloat16 and MixedFloat16 the layers compute in the half
// type, the variables and their gradients stay float32, the output is
// float32, and training reaches float32's loss within the half types'
// precision.
func TestMixedPrecisionTrains(t *testing.T) {
	b := toyBatch()
	losses := map[string]float64{}
	for _, c := range []struct {
		p    nn.Policy
		opt  func(nn.Optimizer) nn.Optimizer
		half tensor.DType
	}{
		{nn.Policy{}, func(o nn.Optimizer) nn.Optimizer { return o }, tensor.Float32},
		{nn.MixedBFloat16, func(o nn.Optimizer) nn.Optimizer { return o }, tensor.BFloat16},
		{nn.MixedFloat16, func(o nn.Optimizer) nn.Optimizer { return nn.NewLossScaleOptimizer(o) }, tensor.Float16},
	} {
		s := &spy{}
		m := mlp(c.p, s)
		step := nn.TrainStep(m, nn.SparseSoftmaxCrossEntropy, c.opt(nn.NewAdam(nn.Constant(0.01))))
		var l float64
		for range 60 {
			var err error
			if l, _, err = step(b); err != nil {
				t.Fatalf("%v: %v", c.p, err)
			}
		}
		losses[c.p.String()] = l
		if s.seen[0] != c.half {
			t.Errorf("%v: a hidden layer computed in %v", c.p, s.seen[0])
		}
		for _, v := range m.Variables() {
			if v.Value().DType() != tensor.Float32 {
				t.Errorf("%v: variable %s is %v", c.p, v.Name(), v.Value().DType())
			}
		}
		if out := m.Forward(b[0]); out.DType() != tensor.Float32 {
			t.Errorf("%v: the output is %v", c.p, out.DType())
		}
	}
	for p, l := range losses {
		if !(l < 0.2) || math.Abs(l-losses["none"]) > 0.05 {
			t.Errorf("%s: loss %.4f after 60 steps; float32's %.4f", p, l, losses["none"])
		}
	}
}

// A convolutional model with batch normalisation and an LSTM run under a
// policy, forward and backward, their gradients float32 and close to
// float32's.
func TestMixedPrecisionLayers(t *testing.T) {
	r := tensor.NewRNG(4)
	same := nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same}, Activation: ops.Relu}
	conv := func(p nn.Policy) *nn.Sequential {
		r := tensor.NewRNG(4)
		m := nn.NewSequential(nn.NewConv2D("conv", r, 3, 3, 2, 4, same), nn.NewBatchNorm("bn", 4, tensor.Float32),
			nn.MaxPool2D{PoolOpts: ops.PoolOpts{Size: [2]int{2, 2}}}, nn.Flatten{}, nn.NewDense("out", r, 4*4*4, 3, nn.DenseOpts{}))
		m.Policy = p
		return m
	}
	lstm := func(p nn.Policy) *nn.Sequential {
		r := tensor.NewRNG(5)
		m := nn.NewSequential(&nn.RNN{Cell: nn.NewLSTMCell("lstm", r, 3, 6, tensor.Float32)}, nn.NewDense("out", r, 6, 2, nn.DenseOpts{}))
		m.Policy = p
		return m
	}
	for name, c := range map[string]struct {
		model func(nn.Policy) *nn.Sequential
		x     *tensor.Tensor
	}{
		"conv": {conv, tensor.RandUniform(r, tensor.Float32, -1, 1, 2, 8, 8, 2)},
		"lstm": {lstm, tensor.RandUniform(r, tensor.Float32, -1, 1, 2, 5, 3)},
	} {
		grads := func(p nn.Policy) []*tensor.Tensor {
			m := c.model(p)
			tp := tape.New()
			loss := ops.Mean(ops.Square(m.Forward(c.x)))
			return tp.Gradient(loss, nn.Values(m.Variables())...)
		}
		want := grads(nn.Policy{})
		for _, p := range []nn.Policy{nn.MixedBFloat16, nn.MixedFloat16} {
			for i, g := range grads(p) {
				if g.DType() != tensor.Float32 {
					t.Fatalf("%s %v: gradient %d is %v", name, p, i, g.DType())
				}
				gv, wv := tensor.ToSlice[float32](g), tensor.ToSlice[float32](want[i])
				scale := 0.0
				for _, w := range wv {
					scale = math.Max(scale, math.Abs(float64(w)))
				}
				for j := range gv {
					if d := math.Abs(float64(gv[j] - wv[j])); d > 0.05*scale+1e-3 {
						t.Fatalf("%s %v: gradient %d element %d is %g, float32's %g", name, p, i, j, gv[j], wv[j])
					}
				}
			}
		}
	}
}

// LossScaleOptimizer skips a step whose gradients are not finite and
// halves its scale, doubles the scale after GrowthInterval finite steps,
// hands Inner the unscaled gradients, and keeps its state in checkpoints.
func TestLossScaleOptimizer(t *testing.T) {
	w := tape.NewVariable("w", tensor.FromSlice([]float32{1, 2}))
	sgd := &nn.SGD{LR: nn.Constant(1)}
	o := nn.NewLossScaleOptimizer(sgd)
	o.GrowthInterval = 3
	s := o.Scale()
	grad := func(v ...float32) []*tensor.Tensor {
		for i := range v {
			v[i] *= float32(o.Scale())
		}
		return []*tensor.Tensor{tensor.FromSlice(v)}
	}
	if err := o.Apply([]*tape.Variable{w}, grad(float32(math.Inf(1)), 0)); err != nil {
		t.Fatal(err)
	}
	if o.Scale() != s/2 || o.Skipped() != 1 || o.Steps() != 0 || tensor.ToSlice[float32](w.Value())[0] != 1 {
		t.Fatalf("after an infinite gradient: scale %g (was %g), %d skipped, %d steps, w %v", o.Scale(), s, o.Skipped(), o.Steps(), w.Value())
	}
	for range 3 {
		if err := o.Apply([]*tape.Variable{w}, grad(0.25, 0.5)); err != nil {
			t.Fatal(err)
		}
	}
	if got := tensor.ToSlice[float32](w.Value()); got[0] != 0.25 || got[1] != 0.5 || o.Steps() != 3 || o.Scale() != s {
		t.Fatalf("after 3 finite steps: w %v, %d steps, scale %g (want %g)", got, o.Steps(), o.Scale(), s)
	}
	o.Apply([]*tape.Variable{w}, grad(0, 0))
	path := filepath.Join(t.TempDir(), "ck.safetensors")
	if err := nn.SaveCheckpoint(path, []*tape.Variable{w}, o, nil); err != nil {
		t.Fatal(err)
	}
	fresh := nn.NewLossScaleOptimizer(&nn.SGD{LR: nn.Constant(1)})
	fresh.GrowthInterval = 3
	if _, err := nn.RestoreCheckpoint(path, []*tape.Variable{w}, fresh); err != nil {
		t.Fatal(err)
	}
	if fresh.Scale() != o.Scale() || fresh.Steps() != o.Steps() {
		t.Fatalf("restored scale %g, steps %d; saved %g, %d", fresh.Scale(), fresh.Steps(), o.Scale(), o.Steps())
	}
	o.Apply([]*tape.Variable{w}, grad(0, 0))
	fresh.Apply([]*tape.Variable{w}, grad(0, 0))
	if fresh.Scale() != o.Scale() { // the restored count of finite steps grows it at the same step
		t.Fatalf("one step after the restore: scale %g, the original's %g", fresh.Scale(), o.Scale())
	}
}

// LossScaleOptimizer skips a step when any element of any gradient is
// an infinity or NaN, of either float dtype, and only then: gradients
// near float32's and float64's largest values (whose squares overflow)
// step.
func TestLossScaleOptimizerFindsNonFinite(t *testing.T) {
	for _, c := range []struct {
		what string
		g32  []float32
		g64  []float64
		skip bool
	}{
		{"finite", []float32{1, -2, 3}, []float64{4, 5}, false},
		{"near the largest values", []float32{3e38, -3e38, 1}, []float64{1e308, -1e308}, false},
		{"a NaN among float32's", []float32{1, float32(math.NaN()), 3}, []float64{4, 5}, true},
		{"an infinity among float64's", []float32{1, 2, 3}, []float64{4, math.Inf(-1)}, true},
	} {
		w32 := tape.NewVariable("w32", tensor.Zeros(tensor.Float32, 3))
		w64 := tape.NewVariable("w64", tensor.Zeros(tensor.Float64, 2))
		o := nn.NewLossScaleOptimizer(&nn.SGD{LR: nn.Constant(1)})
		if err := o.Apply([]*tape.Variable{w32, nil, w64}, []*tensor.Tensor{tensor.FromSlice(c.g32), nil, tensor.FromSlice(c.g64)}); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if skipped := o.Skipped() == 1; skipped != c.skip {
			t.Errorf("%s: skipped %v, want %v", c.what, skipped, c.skip)
		}
		if got := tensor.ToSlice[float64](w64.Value()); !c.skip && got[0] != -c.g64[0]/o.Scale() {
			t.Errorf("%s: w64 %v after the step, want -g/scale", c.what, got)
		}
	}
	w := tape.NewVariable("w", tensor.Zeros(tensor.Float32, 2))
	o := nn.NewLossScaleOptimizer(&nn.SGD{LR: nn.Constant(1)})
	if err := o.Apply([]*tape.Variable{w}, []*tensor.Tensor{tensor.Zeros(tensor.Float32, 3)}); err == nil {
		t.Error("a gradient of another shape: no error")
	}
}

// The traced step scales the loss by the optimizer's scale of each step
// (an argument of the graph, not a constant): it takes the eager step's
// steps.
func TestTracedStepScalesTheLoss(t *testing.T) {
	b := toyBatch()
	var vars [2][]*tape.Variable
	for i, mk := range []func(nn.Module, nn.Loss, nn.Optimizer) nn.Step{nn.TrainStep, nn.TracedTrainStep} {
		m := mlp(nn.MixedFloat16, &spy{})
		opt := nn.NewLossScaleOptimizer(nn.NewAdam(nn.Constant(0.01)))
		opt.GrowthInterval = 2 // the scale changes between steps
		step := mk(m, nn.SparseSoftmaxCrossEntropy, opt)
		for range 5 {
			if _, _, err := step(b); err != nil {
				t.Fatal(err)
			}
		}
		vars[i] = m.Variables()
	}
	for i := range vars[0] {
		e, tr := tensor.ToSlice[float32](vars[0][i].Value()), tensor.ToSlice[float32](vars[1][i].Value())
		for j := range e {
			if math.Abs(float64(e[j]-tr[j])) > 1e-3 {
				t.Fatalf("variable %s element %d: eager %g, traced %g", vars[0][i].Name(), j, e[j], tr[j])
			}
		}
	}
}

// The data-parallel step scales the loss too (in its gradient's seed):
// on one process it takes TrainStep's steps under mixed float16 with a
// loss scale that changes between steps.
func TestDistributedStepScalesTheLoss(t *testing.T) {
	b := toyBatch()
	var vars [2][]*tape.Variable
	for i, mk := range []func(nn.Module, nn.Loss, nn.Optimizer) nn.Step{
		nn.TrainStep,
		func(m nn.Module, l nn.Loss, o nn.Optimizer) nn.Step {
			return nn.DistributedTrainStep(collective.Single(), m, l, o)
		},
	} {
		m := mlp(nn.MixedFloat16, &spy{})
		opt := nn.NewLossScaleOptimizer(nn.NewAdam(nn.Constant(0.01)))
		opt.GrowthInterval = 2
		step := mk(m, nn.SparseSoftmaxCrossEntropy, opt)
		for range 5 {
			if _, _, err := step(b); err != nil {
				t.Fatal(err)
			}
		}
		vars[i] = m.Variables()
	}
	for i := range vars[0] {
		e, d := tensor.ToSlice[float32](vars[0][i].Value()), tensor.ToSlice[float32](vars[1][i].Value())
		for j := range e {
			if math.Abs(float64(e[j]-d[j])) > 1e-4 {
				t.Fatalf("variable %s element %d: TrainStep %g, DistributedTrainStep %g", vars[0][i].Name(), j, e[j], d[j])
			}
		}
	}
}

// plainOptimizer hides its optimizer's kind: TrainStep asks its tape for
// plain (float32) gradients, as for a user's optimizer.
type plainOptimizer struct{ nn.Optimizer }

// Under a mixed policy TrainStep and TracedTrainStep hand nn's
// optimizers the half gradients of the weights (tape.Options.HalfGradients) and the weights'
// casts are kept between steps; the variables follow, to the bit, the
// steps of the same optimizer given float32 gradients, for every
// optimizer and both half types; behind a LossScaleOptimizer too, whose
// unscaling is then the optimizer's step's (ops.AdamParams.GradScale)
// where it was a pass of its own. A LossScaleOptimizer over another
// optimizer takes half gradients as their widening.
func TestMixedStepTakesHalfGradients(t *testing.T) {
	b := toyBatch()
	momentum := func() nn.Optimizer { return &nn.SGD{LR: nn.Constant(0.05), Momentum: 0.9} }
	for name, opt := range map[string]func() nn.Optimizer{
		"Adam":     func() nn.Optimizer { return nn.NewAdam(nn.Constant(0.01)) },
		"SGD":      func() nn.Optimizer { return nn.NewSGD(nn.Constant(0.05)) },
		"momentum": momentum,
		"RMSProp":  func() nn.Optimizer { return nn.NewRMSProp(nn.Constant(0.01)) },
	} {
		for _, p := range []nn.Policy{nn.MixedBFloat16, nn.MixedFloat16} {
			for mode, stepMaker := range map[string]func(nn.Module, nn.Loss, nn.Optimizer) nn.Step{"eager": nn.TrainStep, "traced": nn.TracedTrainStep} {
				for _, scaled := range []bool{false, true} {
					for _, clipped := range []bool{false, true} {
						var models [2]*nn.Sequential
						for k := range models {
							models[k] = mlp(p, &spy{})
							o := opt()
							if k == 1 {
								o = plainOptimizer{o}
							}
							if clipped { // a bound the gradients pass: the factor is not 1
								o = nn.NewClippedOptimizer(o, 0.05)
							}
							if scaled {
								ls := nn.NewLossScaleOptimizer(o)
								ls.GrowthInterval = 2 // the scale changes between steps
								o = ls
							}
							step := stepMaker(models[k], nn.SparseSoftmaxCrossEntropy, o)
							for range 4 {
								if _, _, err := step(b); err != nil {
									t.Fatalf("%s %s %v: %v", mode, name, p, err)
								}
							}
						}
						for i, v := range models[0].Variables() {
							if !bytes.Equal(v.Value().HostBytes(), models[1].Variables()[i].Value().HostBytes()) {
								t.Errorf("%s %s %v (loss scaled %v, clipped %v): variable %s differs from the steps with float32 gradients", mode, name, p, scaled, clipped, v.Name())
							}
						}
					}
				}
			}
		}
	}
	grads := func(dt tensor.DType) []*tensor.Tensor {
		return []*tensor.Tensor{ops.Cast(tensor.FromSlice([]float32{0.5, -1e-3, 3}), dt)}
	}
	var vars [2]*tape.Variable
	for k, dt := range []tensor.DType{tensor.Float16, tensor.Float32} {
		vars[k] = tape.NewVariable("w", tensor.FromSlice([]float32{1, 2, 3}))
		o := nn.NewLossScaleOptimizer(plainOptimizer{momentum()})
		for range 2 {
			g := grads(tensor.Float16)
			if dt == tensor.Float32 {
				g = []*tensor.Tensor{ops.Cast(g[0], dt)}
			}
			if err := o.Apply([]*tape.Variable{vars[k]}, g); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !bytes.Equal(vars[0].Value().HostBytes(), vars[1].Value().HostBytes()) {
		t.Errorf("LossScaleOptimizer: float16 gradients step %v, their widening %v", tensor.ToSlice[float32](vars[0].Value()), tensor.ToSlice[float32](vars[1].Value()))
	}
}
