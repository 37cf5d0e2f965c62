package nccl

import (
	"fmt"
	"testing"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/tensor"
)

// BenchmarkAllReduceGPU is an in-place AllReduce of float32 on one rank
// (collective.Single as the host side): NCCL's cost per call and its
// bandwidth through the GPU's memory, the floor under a data-parallel
// step's reduction (each call synchronised). On the emulator it measures
// the emulator.
func BenchmarkAllReduceGPU(b *testing.B) {
	gpu := testGPU(b)
	c, err := Open(gpu, collective.Single())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, n := range []int{1 << 8, 1 << 18, 1 << 24} { // 1 KB, 1 MB, 64 MB
		b.Run(fmt.Sprintf("%dKB", 4*n>>10), func(b *testing.B) {
			x, err := tensor.FullOn(gpu, tensor.Float32, 1, n).To(gpu)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(4 * n))
			for b.Loop() { // each call waited for, as a step's reduction is
				if err := c.AllReduceInPlace(x, collective.Sum); err != nil {
					b.Fatal(err)
				}
				if err := gpu.Synchronize(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
