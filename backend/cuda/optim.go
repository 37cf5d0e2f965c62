package cuda

import (
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
)

// AdamStep takes an Adam step over ts in place (device.AdamStepper): one
// launch per kernels.AdamSlots tensors (a kernel of 8 slots where they
// fit), a block per chunk of kernels.OptimChunk elements, the formula
// cpu.AdamInPlace's to the bit.
func (d *Device) AdamStep(elem int, ts []device.AdamTensor, s device.AdamSettings) error {
	if elem != 4 && elem != 8 {
		return fmt.Errorf("cuda: AdamStep of %d-byte elements: float32 or float64 only", elem)
	}
	tab := make([]kernels.AdamTensor, 0, len(ts))
	for i, t := range ts {
		var ptrs [4]uint64
		for k, b := range []device.Buffer{t.W, t.M, t.V, t.G} {
			gb, err := bufOf(b, d, []string{"value", "first moment", "second moment", "gradient"}[k])
			if err != nil {
				return fmt.Errorf("cuda: AdamStep, tensor %d: %w", i, err)
			}
			if gb.size < t.N*elem {
				return fmt.Errorf("cuda: AdamStep, tensor %d: a %d-byte buffer for %d elements", i, gb.size, t.N)
			}
			ptrs[k] = uint64(gb.ptr)
		}
		if t.N > 0 {
			tab = append(tab, kernels.AdamTensor{W: ptrs[0], M: ptrs[1], V: ptrs[2], G: ptrs[3], N: t.N})
		}
	}
	for len(tab) > 0 {
		part := tab[:min(len(tab), kernels.AdamSlots)]
		tab = tab[len(part):]
		slots := kernels.AdamSlotCounts[slices.IndexFunc(kernels.AdamSlotCounts, func(n int) bool { return n >= len(part) })]
		name := kernels.Name("adam_multi", fmt.Sprint(slots), map[int]string{4: "f32", 8: "f64"}[elem])
		table, blocks := kernels.AdamTable(part)
		args := adamConstants(new(cu.Args).Bytes(table, 8), elem, s)
		if err := d.launchBlocks("optim", name, blocks, blockSize, args); err != nil {
			return err
		}
	}
	return nil
}

// adamConstants appends the kernel's constants, rounded to the dtype as
// cpu.AdamInPlace rounds them: β1, 1-β1, β2, 1-β2, 1/C1, 1/C2, ε, the
// rate and the weight decay.
func adamConstants(a *cu.Args, elem int, s device.AdamSettings) *cu.Args {
	for _, v := range []float64{s.Beta1, 1 - s.Beta1, s.Beta2, 1 - s.Beta2, 1 / s.C1, 1 / s.C2, s.Eps, s.LR, s.WeightDecay} {
		if elem == 4 {
			a.F32(float32(v))
		} else {
			a.F64(v)
		}
	}
	return a
}

var _ device.AdamStepper = (*Device)(nil)
