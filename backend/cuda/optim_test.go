package cuda

import (
	"bytes"
	"fmt"
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
	for len(sizes) < kernels.AdamSlots+7 {
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

// nn.Adam on the GPU takes a whole model's step in one launch.
func TestAdamIsOneLaunchPerStep(t *testing.T) {
	d := testGPU(t)
	ctx, ok := d.ctx.(*emu.Context)
	if !ok {
		t.Skip("counts the emulator's launches")
	}
	restore := device.SetDefault(d)
	defer restore()
	r := tensor.NewRNG(4)
	model := nn.NewSequential(nn.NewDense("a", r, 8, 16, nn.DenseOpts{Activation: ops.Relu}), nn.NewDense("b", r, 16, 4, nn.DenseOpts{}))
	vars := model.Variables()
	var grads []*tensor.Tensor
	for _, v := range vars {
		grads = append(grads, ops.OnesLike(v.Value()))
	}
	opt := nn.NewAdam(nn.Constant(0.01))
	if err := opt.Apply(vars, grads); err != nil { // makes the moment slots
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
		t.Errorf("an Adam step of %d variables launched %d kernels, want 1", len(vars), n)
	}
}
