package peers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

func gflops(b *testing.B, n int) {
	b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkGonumMatMul is gonum's pure-Go Sgemm/Dgemm on square matrices.
func BenchmarkGonumMatMul(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{128, 512, 1024} {
		b.Run(fmt.Sprintf("float32/%d", n), func(b *testing.B) {
			mk := func() blas32.General {
				m := blas32.General{Rows: n, Cols: n, Stride: n, Data: make([]float32, n*n)}
				for i := range m.Data {
					m.Data[i] = r.Float32()*2 - 1
				}
				return m
			}
			x, y, c := mk(), mk(), mk()
			for b.Loop() {
				blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, x, y, 0, c)
			}
			gflops(b, n)
		})
	}
	b.Run("float64/1024", func(b *testing.B) {
		n := 1024
		mk := func() blas64.General {
			m := blas64.General{Rows: n, Cols: n, Stride: n, Data: make([]float64, n*n)}
			for i := range m.Data {
				m.Data[i] = r.Float64()*2 - 1
			}
			return m
		}
		x, y, c := mk(), mk(), mk()
		for b.Loop() {
			blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, x, y, 0, c)
		}
		gflops(b, n)
	})
}
