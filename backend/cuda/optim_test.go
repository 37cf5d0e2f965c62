package cuda

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// An Adam step over many variables at once on the GPU is, bit for bit,
// the fused step the CPU takes one variable at a time: more variables than
// one launch holds, some longer than a chunk, some of one element, both
// float dtypes, with and without weight decay.
func TestAdamStepMatchesTheCPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(21)
	sizes := []int{1, 3, kernels.OptimChunk + 5, 0, 17}
	for len(sizes) < kernels.OptimSlots+7 {
		sizes = append(sizes, 1+len(sizes)*13)
	}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, wd := range []float64{0, 0.01} {
			p := ops.AdamParams{LR: 0.003, Beta1: 0.9, Beta2: 0.999, C1: 1 - 0.9*0.9*0.9, C2: 1 - 0.999*0.999*0.999, Eps: 1e-7, WeightDecay: wd}
			var host, gpu [4][]*tape.Variable
			var grads, ggrads []*tensor.Tensor
			for i, n := range sizes {
				for k := range 4 {
					x := tensor.RandNormal(r, dt, n)
					if k == 2 {
						x = ops.Abs(x) // a second moment
					}
					host[k] = append(host[k], tape.NewVariable(fmt.Sprint(k, i), x))
					gpu[k] = append(gpu[k], tape.NewVariable(fmt.Sprint(k, i), onGPU(t, d, x)))
				}
				grads = append(grads, host[3][i].Value())
				ggrads = append(ggrads, gpu[3][i].Value())
			}
			done := tape.AdamUpdateAll(gpu[0], gpu[1], gpu[2], ggrads, p)
			want := tape.AdamUpdateAll(host[0], host[1], host[2], grads, p)
			for i := range sizes {
				if !done[i] || !want[i] {
					t.Fatalf("%v: variable %d not updated in one pass (GPU %v, CPU %v)", dt, i, done[i], want[i])
				}
				for k, what := range []string{"value", "first moment", "second moment"} {
					got, w := onHost(t, gpu[k][i].Value()).HostBytes(), host[k][i].Value().HostBytes()
					if !bytes.Equal(got, w) {
						t.Fatalf("%v decay %v: variable %d (%d elements), %s differs from the CPU's", dt, wd, i, sizes[i], what)
					}
				}
			}
		}
	}
}

// Every rule's step (Adam, SGD with momentum and Nesterov's, RMSProp
// with and without momentum; gradients scaled or not, multiplied by a
// device factor or not) over many variables
// at once on the GPU is, bit for bit, the fused step the CPU takes one
// variable at a time, in both float dtypes, over more variables than one
// launch holds.
func TestOptimizerStepsMatchTheCPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(22)
	sizes := []int{1, kernels.OptimChunk + 5, 0, 17}
	for len(sizes) < kernels.OptimSlots+3 {
		sizes = append(sizes, 1+len(sizes)*29)
	}
	for _, s := range stepSettings {
		slots := slotsOf(s)
		for _, f := range stepFactors(t, d) {
			what := fmt.Sprintf("rule %d (Nesterov %v, momentum %v, gradients times %g, factor %v)", s.Rule, s.Nesterov, s.Momentum, s.GradScale, f[0] != nil)
			for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
				var host, gpu [3][]*tape.Variable // the values, then the slots
				var grads, ggrads []*tensor.Tensor
				for i, n := range sizes {
					for k := range 1 + slots {
						x := tensor.RandNormal(r, dt, n)
						if k > 0 {
							x = ops.Abs(x)
						}
						host[k] = append(host[k], tape.NewVariable(fmt.Sprint(k, i), x))
						gpu[k] = append(gpu[k], tape.NewVariable(fmt.Sprint(k, i), onGPU(t, d, x)))
					}
					g := tensor.RandNormal(r, dt, n)
					grads, ggrads = append(grads, g), append(ggrads, onGPU(t, d, g))
				}
				for step := range 2 {
					done := stepBy(s, f[1], gpu[0], gpu[1:1+slots], ggrads)
					want := stepBy(s, f[0], host[0], host[1:1+slots], grads)
					for i := range sizes {
						if !done[i] || !want[i] {
							t.Fatalf("%s %v: variable %d not updated in one pass (GPU %v, CPU %v)", what, dt, i, done[i], want[i])
						}
						for k := range 1 + slots {
							got, w := onHost(t, gpu[k][i].Value()).HostBytes(), host[k][i].Value().HostBytes()
							if !bytes.Equal(got, w) {
								t.Fatalf("%s %v, step %d: variable %d (%d elements), tensor %d differs from the CPU's", what, dt, step, i, sizes[i], k)
							}
						}
					}
				}
			}
		}
	}
}

// nn.Adam, nn.SGD with momentum (and Nesterov's) and nn.RMSProp (with
// and without momentum) on the GPU take a whole model's step in one
// launch.
func TestOptimizersAreOneLaunchPerStep(t *testing.T) {
	d := testGPU(t)
	ctx, ok := d.ctx.(*emu.Context)
	if !ok {
		t.Skip("counts the emulator's launches")
	}
	restore := device.SetDefault(d)
	defer restore()
	rmsMomentum := nn.NewRMSProp(nn.Constant(0.01))
	rmsMomentum.Momentum = 0.5
	for name, opt := range map[string]nn.Optimizer{
		"Adam":                  nn.NewAdam(nn.Constant(0.01)),
		"AdamW":                 nn.NewAdamW(nn.Constant(0.01), 0.01),
		"SGD with momentum":     &nn.SGD{LR: nn.Constant(0.01), Momentum: 0.9},
		"SGD, Nesterov":         &nn.SGD{LR: nn.Constant(0.01), Momentum: 0.9, Nesterov: true},
		"RMSProp":               nn.NewRMSProp(nn.Constant(0.01)),
		"RMSProp with momentum": rmsMomentum,
	} {
		r := tensor.NewRNG(4)
		model := nn.NewSequential(nn.NewDense("a", r, 8, 16, nn.DenseOpts{Activation: ops.Relu}), nn.NewDense("b", r, 16, 4, nn.DenseOpts{}))
		vars := model.Variables()
		var grads []*tensor.Tensor
		for _, v := range vars {
			grads = append(grads, ops.OnesLike(v.Value()))
		}
		if err := opt.Apply(vars, grads); err != nil { // makes the slots
			t.Fatal(err)
		}
		if err := d.Synchronize(); err != nil {
			t.Fatal(err)
		}
		before := ctx.Launches
		if err := opt.Apply(vars, grads); err != nil {
			t.Fatal(err)
		}
		if err := d.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if n := ctx.Launches - before; n != 1 {
			t.Errorf("%s: a step of %d variables launched %d kernels, want 1", name, len(vars), n)
		}
	}
}

// stepSettings are a step of each rule and structure.
var stepSettings = []device.StepSettings{
	{Rule: device.StepAdam, LR: 0.003, Beta1: 0.9, Beta2: 0.999, C1: 0.1, C2: 0.001, Eps: 1e-7, WeightDecay: 0.01},
	{Rule: device.StepAdam, LR: 0.003, Beta1: 0.9, Beta2: 0.999, C1: 0.1, C2: 0.001, Eps: 1e-7, GradScale: 0x1p-15}, // a loss scale's inverse
	{Rule: device.StepMomentum, LR: 0.0123, Momentum: 0.9},
	{Rule: device.StepMomentum, LR: 0.0123, Momentum: 0.9, Nesterov: true, GradScale: 0.37}, // rounded
	{Rule: device.StepRMSProp, LR: 0.0031, Rho: 0.9, Eps: 1e-7},
	{Rule: device.StepRMSProp, LR: 0.0031, Rho: 0.9, Eps: 1e-7, Momentum: 0.7, GradScale: 3},
}

// StepAt, reading the constants SetStepConstants wrote, takes Step's
// step to the bit for every rule and both float dtypes, twice over with
// the constants rewritten between (a recording's replays), every other
// setting with a gradient factor it reads when it runs (rewritten between
// too); a buffer too small for the constants or the factor, or of the
// host, is refused.
func TestStepAtReadsItsConstants(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(23)
	settings := stepSettings
	for i, s := range settings {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			var factor *tensor.Tensor // the device's, rewritten in place
			if i%2 == 1 {
				factor = tensor.FullOn(d, dt, 1)
			}
			n := kernels.OptimChunk + 9
			var sets [2][4]*tensor.Tensor // w, two slots, g
			for k := range 4 {
				x := ops.Abs(tensor.RandNormal(r, dt, n))
				for j := range sets {
					sets[j][k] = onGPU(t, d, x)
				}
			}
			ts := func(j int) []device.StepTensor {
				return []device.StepTensor{{W: sets[j][0].Buffer(), Slots: [2]device.Buffer{sets[j][1].Buffer(), sets[j][2].Buffer()}, G: sets[j][3].Buffer(), N: n}}
			}
			consts, err := tensor.Empty(d, tensor.Uint8, tensor.Shape{device.StepConstBytes})
			if err != nil {
				t.Fatal(err)
			}
			for step := range 2 {
				s.LR *= 2 // the constants change from step to step
				if factor != nil {
					f := ops.Cast(tensor.Scalar(0.61+0.1*float64(step)), dt)
					if err := d.Fill(factor.Buffer(), 0, 1, f.HostBytes()); err != nil {
						t.Fatal(err)
					}
					s.GradFactor = factor.Buffer()
				}
				if err := d.Step(dt.Size(), ts(0), s); err != nil {
					t.Fatal(err)
				}
				if err := d.SetStepConstants(dt.Size(), s, consts.Buffer()); err != nil {
					t.Fatal(err)
				}
				if err := d.StepAt(dt.Size(), ts(1), s, consts.Buffer()); err != nil {
					t.Fatal(err)
				}
				for k := range 3 {
					if !bytes.Equal(onHost(t, sets[0][k]).HostBytes(), onHost(t, sets[1][k]).HostBytes()) {
						t.Fatalf("rule %d (Nesterov %v, momentum %v, factor %v) %v, step %d: tensor %d differs from Step's", s.Rule, s.Nesterov, s.Momentum, factor != nil, dt, step, k)
					}
				}
			}
		}
	}
	small, _ := tensor.Empty(d, tensor.Uint8, tensor.Shape{device.StepConstBytes - 8})
	host, _ := tensor.Empty(device.Host(), tensor.Uint8, tensor.Shape{device.StepConstBytes})
	for what, b := range map[string]device.Buffer{"a small buffer": small.Buffer(), "a host buffer": host.Buffer()} {
		if err := d.SetStepConstants(4, settings[0], b); err == nil {
			t.Errorf("SetStepConstants into %s: no error", what)
		}
		if err := d.StepAt(4, nil, settings[0], b); err == nil {
			t.Errorf("StepAt from %s: no error", what)
		}
	}
	consts, _ := tensor.Empty(d, tensor.Uint8, tensor.Shape{device.StepConstBytes})
	small, _ = tensor.Empty(d, tensor.Uint8, tensor.Shape{2})
	for what, b := range map[string]device.Buffer{"a 2-byte factor": small.Buffer(), "a host factor": host.Buffer()} {
		s := settings[0]
		s.GradFactor = b
		if err := d.StepAt(4, nil, s, consts.Buffer()); err == nil || !strings.Contains(err.Error(), "factor") {
			t.Errorf("StepAt with %s: %v", what, err)
		}
		if err := d.Step(4, nil, s); err == nil || !strings.Contains(err.Error(), "factor") {
			t.Errorf("Step with %s: %v", what, err)
		}
	}
}
