package cuda

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/castcache"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// stepBy takes s's step on vars with their slots (slots[k][i]: variable
// i's slot k, as many lists as the rule has) through package tape, the
// gradients multiplied by factor too where it is not nil (GradFactor).
func stepBy(s device.StepSettings, factor *tensor.Tensor, vars []*tape.Variable, slots [][]*tape.Variable, grads []*tensor.Tensor) []bool {
	switch s.Rule {
	case device.StepAdam:
		return tape.AdamUpdateAll(vars, slots[0], slots[1], grads, ops.AdamParams{LR: s.LR, Beta1: s.Beta1, Beta2: s.Beta2, C1: s.C1, C2: s.C2, Eps: s.Eps, WeightDecay: s.WeightDecay, GradScale: s.GradScale, GradFactor: factor})
	case device.StepMomentum:
		return tape.MomentumUpdateAll(vars, slots[0], grads, ops.MomentumParams{LR: s.LR, Momentum: s.Momentum, Nesterov: s.Nesterov, GradScale: s.GradScale, GradFactor: factor})
	}
	var moms []*tape.Variable
	if s.Momentum > 0 {
		moms = slots[1]
	}
	return tape.RMSPropUpdateAll(vars, slots[0], moms, grads, ops.RMSPropParams{LR: s.LR, Rho: s.Rho, Eps: s.Eps, Momentum: s.Momentum, GradScale: s.GradScale, GradFactor: factor})
}

// stepFactors are the gradient factors the step tests take each setting
// with: none, and a float32 scalar that rounds (a clip's; cast for
// float64 variables), on the CPU and on the GPU.
func stepFactors(t *testing.T, d *Device) [][2]*tensor.Tensor {
	f := tensor.Scalar(float32(0.7313))
	return [][2]*tensor.Tensor{{nil, nil}, {f, onGPU(t, d, f)}}
}

// slotsOf is how many slots a variable has under s.
func slotsOf(s device.StepSettings) int {
	if s.Rule == device.StepAdam || s.Rule == device.StepRMSProp && s.Momentum > 0 {
		return 2
	}
	return 1
}

// A mixed-precision step (half gradients of float32 variables,
// tape.Options.HalfGradients') on the GPU is, bit for bit, the CPU's step
// from the gradients widened, for every rule and both half types, over
// more variables than a launch holds, beside variables whose gradients
// are float32: a launch for each format. Each variable stepped from a
// half gradient then has its half copy, its new value cast as Cast
// rounds, which the next Cast of the variable returns without a kernel;
// a cast taken before the step and held keeps its values.
func TestHalfGradientStepsMatchTheCPU(t *testing.T) {
	d := testGPU(t)
	ctx, _ := d.ctx.(*emu.Context)
	r := tensor.NewRNG(24)
	sizes := []int{1, kernels.OptimChunk + 5, 0, 17}
	for len(sizes) < kernels.OptimSlots+3 {
		sizes = append(sizes, 1+len(sizes)*29)
	}
	factors := stepFactors(t, d)
	for j, s := range stepSettings {
		for _, h := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
			f := factors[j%2] // every other setting with a factor
			what := fmt.Sprintf("rule %d (Nesterov %v, momentum %v, factor %v) from %v", s.Rule, s.Nesterov, s.Momentum, f[0] != nil, h)
			slots := slotsOf(s)
			var host, gpu [3][]*tape.Variable // the values, then the slots
			var grads, ggrads []*tensor.Tensor
			halfGrad := func(i int) bool { return i%7 != 3 }
			for i, n := range sizes {
				for k := range 1 + slots {
					x := tensor.RandNormal(r, tensor.Float32, n)
					if k > 0 {
						x = ops.Abs(x)
					}
					host[k] = append(host[k], tape.NewVariable(fmt.Sprint(k, i), x))
					gpu[k] = append(gpu[k], tape.NewVariable(fmt.Sprint(k, i), onGPU(t, d, x)))
				}
				g := ops.Cast(tensor.RandNormal(r, tensor.Float32, n), h)
				wide := ops.Cast(g, tensor.Float32)
				if !halfGrad(i) {
					g = wide
				}
				grads, ggrads = append(grads, wide), append(ggrads, onGPU(t, d, g))
			}
			for step := range 2 {
				// A cast of a variable held across the step (a tape's, for
				// a product's gradient) keeps the values it had.
				held := ops.Cast(gpu[0][1].Value(), h)
				heldBytes := onHost(t, held).HostBytes()
				var before int
				if ctx != nil {
					waitGPU(t, d)
					before = ctx.Launches
				}
				done := stepBy(s, f[1], gpu[0], gpu[1:1+slots], ggrads)
				want := stepBy(s, f[0], host[0], host[1:1+slots], grads)
				if ctx != nil {
					waitGPU(t, d)
					if n := ctx.Launches - before; n != 2 {
						t.Errorf("%s, step %d: %d launches, want 2 (one a format of gradients)", what, step, n)
					}
				}
				if !bytes.Equal(onHost(t, held).HostBytes(), heldBytes) {
					t.Fatalf("%s, step %d: a cast held across the step changed", what, step)
				}
				held.Release()
				for i := range sizes {
					if !done[i] || !want[i] {
						t.Fatalf("%s: variable %d not updated in one pass (GPU %v, CPU %v)", what, i, done[i], want[i])
					}
					for k := range 1 + slots {
						got, w := onHost(t, gpu[k][i].Value()).HostBytes(), host[k][i].Value().HostBytes()
						if !bytes.Equal(got, w) {
							t.Fatalf("%s, step %d: variable %d (%d elements), tensor %d differs from the CPU's", what, step, i, sizes[i], k)
						}
					}
					v := gpu[0][i].Value()
					kept := castcache.Get(v, h)
					if !halfGrad(i) {
						if kept != nil {
							t.Errorf("%s: variable %d, stepped from a float32 gradient, has a current half copy", what, i)
						}
						continue
					}
					if kept == nil {
						t.Fatalf("%s, step %d: variable %d has no current half copy", what, step, i)
					}
					cast := ops.Cast(ops.Identity(v), h) // a snapshot's cast: the kernel
					if !bytes.Equal(onHost(t, kept).HostBytes(), onHost(t, cast).HostBytes()) {
						t.Fatalf("%s, step %d: variable %d's half copy is not its value cast", what, step, i)
					}
					kept.Release()
					if ctx != nil && sizes[i] > 0 {
						waitGPU(t, d)
						before := ctx.Launches
						c := ops.Cast(v, h)
						if waitGPU(t, d); ctx.Launches != before {
							t.Errorf("%s: Cast of variable %d after the step launched a kernel", what, i)
						}
						c.Release()
					}
				}
			}
		}
	}
}
