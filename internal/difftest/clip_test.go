package difftest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/tensor"
)

type clipCase struct {
	ID    int         `json:"id"`
	Max   float64     `json:"max"`
	Grads [][]float64 `json:"grads"`
}

type clipResult struct {
	ID    int         `json:"id"`
	Norm  float64     `json:"norm"`
	Grads [][]float64 `json:"grads"`
}

// nn.ClipByGlobalNorm and nn.ClipByGlobalNormTensor (float64 gradients)
// give PyTorch's clip_grad_norm_'s norm and clipped gradients: bounds
// below, near and above the norm, empty gradients among them, many of
// them. PyTorch divides by the norm plus 1e-6 (ours by the norm), so
// clipped values agree to about 1e-6 relative; within the bound both
// leave every value as it was.
func TestClipByGlobalNormMatchesTorch(t *testing.T) {
	needTorch(t)
	r := rand.New(rand.NewPCG(3, 5))
	var cases []clipCase
	for id := range 60 {
		c := clipCase{ID: id}
		for range 1 + r.IntN(30) {
			g := make([]float64, r.IntN(40))
			for i := range g {
				g[i] = r.NormFloat64() * math.Pow(10, float64(r.IntN(5)-2))
			}
			c.Grads = append(c.Grads, g)
		}
		norm := 0.0
		for _, g := range c.Grads {
			for _, v := range g {
				norm += v * v
			}
		}
		c.Max = math.Sqrt(norm) * []float64{0.1, 0.999, 1.001, 10}[id%4]
		cases = append(cases, c)
	}
	want := runCases(t, "clip_norm.py", cases, func(r *clipResult) int { return r.ID })
	for _, c := range cases {
		w := want[c.ID]
		if w == nil {
			t.Fatalf("case %d: no result", c.ID)
		}
		grads := make([]*tensor.Tensor, len(c.Grads))
		for i, g := range c.Grads {
			grads[i] = tensor.FromSlice(g)
		}
		hostClipped, hostNorm := nn.ClipByGlobalNorm(grads, c.Max)
		devClipped, devNorm := nn.ClipByGlobalNormTensor(grads, c.Max)
		for what, norm := range map[string]float64{"ClipByGlobalNorm": hostNorm, "ClipByGlobalNormTensor": devNorm.Float()} {
			if !approx.Close(norm, w.Norm, 1e-12) {
				t.Errorf("case %d, %s: norm %v, PyTorch's %v", c.ID, what, norm, w.Norm)
			}
		}
		clipping := c.Max < w.Norm
		for what, out := range map[string][]*tensor.Tensor{"ClipByGlobalNorm": hostClipped, "ClipByGlobalNormTensor": devClipped} {
			for i, g := range out {
				got := tensor.ToSlice[float64](g)
				for j, v := range got {
					tol := 0.0 // within the bound: untouched
					if clipping {
						tol = 2e-6 // PyTorch's 1e-6 added to the norm
					}
					if !approx.Close(v, w.Grads[i][j], tol) {
						t.Fatalf("case %d, %s: gradient %d element %d: %v, PyTorch's %v", c.ID, what, i, j, v, w.Grads[i][j])
					}
				}
			}
		}
	}
}
