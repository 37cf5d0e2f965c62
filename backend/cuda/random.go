package cuda

import (
	"fmt"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
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
