package cpu

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
)

// AdamInPlace over three steps against the update computed element by
// element in float64, for float32 and float64 buffers long enough to be
// split across the workers; the moments too.
func TestAdamInPlace(t *testing.T) {
	const n = 50001
	w32, m32, v32, g32 := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	w64, m64, v64, g64 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	ref, ref64 := make([][3]float64, n), make([][3]float64, n) // w, m, v
	for i := range n {
		w := math.Sin(float64(i)) * 2
		g := math.Cos(float64(i)*0.7) / 3
		w32[i], g32[i], w64[i], g64[i] = float32(w), float32(g), w, g
		ref[i][0], ref64[i][0] = float64(float32(w)), w
	}
	step := func(r *[3]float64, g float64, p ops.AdamParams) {
		r[1] = p.Beta1*r[1] + (1-p.Beta1)*g
		r[2] = p.Beta2*r[2] + (1-p.Beta2)*g*g
		r[0] -= p.LR * (r[1]/p.C1/(math.Sqrt(r[2]/p.C2)+p.Eps) + p.WeightDecay*r[0])
	}
	for k := 1; k <= 3; k++ {
		p := ops.AdamParams{LR: 0.01, Beta1: 0.9, Beta2: 0.999, C1: 1 - math.Pow(0.9, float64(k)),
			C2: 1 - math.Pow(0.999, float64(k)), Eps: 1e-7, WeightDecay: 0.05}
		AdamInPlace(w32, m32, v32, g32, p)
		AdamInPlace(w64, m64, v64, g64, p)
		for i := range ref {
			step(&ref[i], float64(g32[i]), p)
			step(&ref64[i], g64[i], p)
		}
	}
	for i, r := range ref {
		for j, got := range []float64{float64(w32[i]), float64(m32[i]), float64(v32[i])} {
			if math.Abs(got-r[j]) > 1e-6*math.Max(1, math.Abs(r[j])) {
				t.Fatalf("float32 element %d, %s: %v, want %v", i, []string{"w", "m", "v"}[j], got, r[j])
			}
		}
		for j, got := range []float64{w64[i], m64[i], v64[i]} {
			if want := ref64[i][j]; math.Abs(got-want) > 1e-13*math.Max(1, math.Abs(want)) {
				t.Fatalf("float64 element %d, %s: %v, want %v", i, []string{"w", "m", "v"}[j], got, want)
			}
		}
	}
}

// Adam's AVX2 kernel equals the Go loop bit for bit (float32, with weight
// decay, lengths around its runs of 8), over three steps.
func TestAdamKernelMatchesGo(t *testing.T) {
	if !haveVecKernels {
		t.Skip("no AVX2+FMA on this CPU: Adam runs its Go loop")
	}
	for _, n := range []int{1, 7, 8, 9, 64, 1003} {
		bufs := func() [4][]float32 {
			var b [4][]float32
			for j := range b {
				b[j] = make([]float32, n)
			}
			for i := range n {
				b[0][i] = float32(math.Sin(float64(i)) * 2)
				b[3][i] = float32(math.Cos(float64(i)*0.7) / 3)
			}
			return b
		}
		vec, scalar := bufs(), bufs()
		for k := 1; k <= 3; k++ {
			p := ops.AdamParams{LR: 0.01, Beta1: 0.9, Beta2: 0.999, C1: 1 - math.Pow(0.9, float64(k)),
				C2: 1 - math.Pow(0.999, float64(k)), Eps: 1e-7, WeightDecay: 0.01}
			adamLoop(vec[0], vec[1], vec[2], vec[3], p)
			haveVecKernels = false
			adamLoop(scalar[0], scalar[1], scalar[2], scalar[3], p)
			haveVecKernels = true
		}
		for j, name := range []string{"w", "m", "v"} {
			for i := range n {
				if math.Float32bits(vec[j][i]) != math.Float32bits(scalar[j][i]) {
					t.Fatalf("n=%d: %s[%d] = %v, the Go loop %v", n, name, i, vec[j][i], scalar[j][i])
				}
			}
		}
	}
}
