package cuda

import (
	"fmt"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// randomKernelNames name the kernel of each distribution.
var randomKernelNames = map[device.RandomDist]string{device.Uniform: "uniform", device.Normal: "normal", device.Bernoulli: "bernoulli"}

// FillRandom writes n elements of the tensor package's random draw r to
// dst, computed on the GPU from the same Philox stream as the host's
// (device.RandomFiller): uniform and Bernoulli values bit for bit, normal
// values within a few ulps (the GPU's logarithm, sine and cosine).
func (d *Device) FillRandom(dst device.Buffer, n int, r device.RandomDraw) error {
	b, err := bufOf(dst, d, "destination")
	if err != nil || n == 0 {
		return err
	}
	kt := kernels.DType("")
	for i, dt := range tensorDTypes {
		if dt.String() == r.DType {
			kt = kernelDTypes[i]
		}
	}
	dist, ok := randomKernelNames[r.Dist]
	if kt == "" || !ok || (r.Dist != device.Bernoulli && kt != kernels.F32 && kt != kernels.F64) {
		return fmt.Errorf("cuda: %s: no random kernel for distribution %d of %s", d.name, r.Dist, r.DType)
	}
	args := newArgs().Ptr(b.ptr).U64(uint64(n)).U32(r.Key[0]).U32(r.Key[1]).U64(r.Counter).F64(r.A).F64(r.B)
	per := kernels.PerBlock(dist, kt)
	return d.launch("random", kernels.Name("rng", dist, string(kt)), (n+per-1)/per, args)
}

// RngBernoulliAt (ops) on the GPU: rng_bernoulli_at_<dtype> reads the
// draw's first block from the starts vector when it runs, so a recording
// replays a fresh draw each time the vector changes.
func init() {
	eager.RegisterKernel("RngBernoulliAt", device.GPU, tensor.Int64, func(c *eager.Call, outs []*tensor.Tensor) {
		a, out := c.Attrs.(ops.RngBernoulliAtAttrs), outs[0]
		n := out.NumElements()
		if n == 0 {
			return
		}
		at := ptr(c.Inputs[0]) + cu.Ptr(8*a.Slot)
		args := newArgs().Ptr(ptr(out)).U64(uint64(n)).U32(a.Key[0]).U32(a.Key[1]).Ptr(at).U64(a.Offset).F64(a.P).F64(0)
		per := kernels.PerBlock("bernoulli", kernelType(a.DType))
		check(c, gpu(c).launch("random", kernels.Name("rng", "bernoulli_at", string(kernelType(a.DType))), (n+per-1)/per, args))
	})
}
