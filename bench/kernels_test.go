package bench

import (
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The large-array kernels of issue 8, on 4M float32 elements. GB/s counts
// every array read or written once (an add moves three arrays), the
// figure PyTorch's side of bench/peers/torch_bench.py reports the same way.
const elems4M = 4 << 20

func benchLarge(b *testing.B, arrays int, f func(x, y *tensor.Tensor) *tensor.Tensor) {
	x := tensor.RandUniform(tensor.NewRNG(1), tensor.Float32, -2, 2, elems4M)
	y := tensor.RandUniform(tensor.NewRNG(2), tensor.Float32, -2, 2, elems4M)
	b.ReportAllocs()
	for b.Loop() {
		f(x, y).Release()
	}
	b.ReportMetric(float64(arrays*4*elems4M)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

func BenchmarkAdd4M(b *testing.B) {
	benchLarge(b, 3, func(x, y *tensor.Tensor) *tensor.Tensor { return ops.Add(x, y) })
}

func BenchmarkTanh4M(b *testing.B) {
	benchLarge(b, 2, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Tanh(x) })
}

func BenchmarkSum4M(b *testing.B) {
	benchLarge(b, 1, func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Sum(x) })
}

func BenchmarkMatMul2048(b *testing.B) { benchMatMul(b, 2048, tensor.Float32) }
