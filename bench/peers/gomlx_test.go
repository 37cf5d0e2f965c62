package peers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// GoMLX with its pure-Go backend (simplego), on the operations eagerflow's
// benchmarks of the same names run. Each graph is compiled once before the
// timer starts; every iteration executes it and frees the result.

func gomlxRandom(r *rand.Rand, dims ...int) *tensors.Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()*4 - 2
	}
	return tensors.FromFlatDataAndDimensions(v, dims...)
}

func gomlxRun(b *testing.B, exec *graph.Exec, args ...any) {
	exec.MustExec1(args...).FinalizeAll() // compiles
	b.ResetTimer()
	for b.Loop() {
		if err := exec.MustExec1(args...).FinalizeAll(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGoMLXMatMul(b *testing.B) {
	backend := simplego.GetBackend()
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{128, 512, 1024} {
		b.Run(fmt.Sprintf("float32/%d", n), func(b *testing.B) {
			exec := graph.MustNewExec(backend, func(x, y *graph.Node) *graph.Node { return graph.MatMul(x, y) })
			gomlxRun(b, exec, gomlxRandom(r, n, n), gomlxRandom(r, n, n))
			gflops(b, n)
		})
	}
}

const elems4M = 4 << 20

func gbps(b *testing.B, arrays int) {
	b.ReportMetric(float64(arrays*4*elems4M)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

func BenchmarkGoMLXAdd4M(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	exec := graph.MustNewExec(simplego.GetBackend(), func(x, y *graph.Node) *graph.Node { return graph.Add(x, y) })
	gomlxRun(b, exec, gomlxRandom(r, elems4M), gomlxRandom(r, elems4M))
	gbps(b, 3)
}

func BenchmarkGoMLXTanh4M(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	exec := graph.MustNewExec(simplego.GetBackend(), func(x *graph.Node) *graph.Node { return graph.Tanh(x) })
	gomlxRun(b, exec, gomlxRandom(r, elems4M))
	gbps(b, 2)
}

func BenchmarkGoMLXSum4M(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	exec := graph.MustNewExec(simplego.GetBackend(), func(x *graph.Node) *graph.Node { return graph.ReduceAllSum(x) })
	gomlxRun(b, exec, gomlxRandom(r, elems4M))
	gbps(b, 1)
}
