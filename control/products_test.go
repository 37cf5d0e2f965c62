package control_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// matMuls counts the MatMul ops that run while it is the profile hook.
type matMuls struct{ n int }

func (m *matMuls) Begin(c *eager.Call) int {
	if c.Op.Name == "MatMul" {
		m.n++
	}
	return 0
}
func (m *matMuls) End(int) {}

// A loop's captured matrices multiplied at every iteration (h·W on the
// right, V·hᵀ on the left, h·U + b in a FusedMatMul, as an RNN's
// recurrent kernel) get their
// gradients from one product over all the iterations: the gradients
// equal the unrolled loop's, first and second order, with three
// products fewer an iteration than the unrolled backward takes (one
// each for W and V, and V's used twice); a checkpointed loop, which
// keeps less, still takes them iteration by iteration.
func TestLoopSumsCapturedProductsAtOnce(t *testing.T) {
	r := tensor.NewRNG(8)
	w, v, u := tensor.RandNormal(r, tensor.Float64, 3, 3), tensor.RandNormal(r, tensor.Float64, 3, 3), tensor.RandNormal(r, tensor.Float64, 3, 3)
	bias := tensor.RandNormal(r, tensor.Float64, 3)
	h0 := tensor.RandNormal(r, tensor.Float64, 2, 3)
	const steps = 6
	body := func(h T) T {
		left := ops.Transpose(ops.MatMul(v, ops.Transpose(h, 1, 0)), 1, 0) // (V·hᵀ)ᵀ: V on the left
		both := ops.MatMul(ops.MatMul(h, v), ops.Transpose(v, 1, 0))       // V on the right, and transposed
		fused := ops.FusedMatMul(h, u, bias, ops.NoActivation)             // U deferred, the bias's gradient the rule's
		return ops.Tanh(ops.Add(ops.Add(ops.Add(ops.MatMul(h, w), ops.Mul(left, left)), both), fused))
	}
	// run returns the gradients of Σh² in W, V and h0, the products the
	// backward pass ran, and the gradient in h0 of the sum of W's
	// gradient (second order, through the loop's backward).
	run := func(loop, checkpoint bool) ([]T, int, T) {
		counter := &matMuls{}
		outer := tape.New()
		outer.Watch(h0)
		tp := tape.New()
		tp.Watch(w, v, h0, u, bias)
		var h T
		if loop {
			h = control.Fori(0, steps, func(_ T, s []T) []T { return []T{body(s[0])} }, []T{h0}, control.WhileOptions{Checkpoint: checkpoint})[0]
		} else {
			h = h0
			for range steps {
				h = body(h)
			}
		}
		y := ops.Sum(ops.Mul(h, h))
		old := eager.SetProfileHook(counter)
		g := tp.Gradient(y, w, v, h0, u, bias)
		eager.SetProfileHook(old)
		return g, counter.n, outer.Gradient(ops.Sum(g[0]), h0)[0]
	}
	want, unrolled, want2 := run(false, false)
	got, looped, got2 := run(true, false)
	for i, name := range []string{"W", "V", "h0", "U", "the bias"} {
		if d := approx.Diff(vals(got[i]), vals(want[i]), 1e-12); d != "" {
			t.Errorf("gradient of %s: %s", name, d)
		}
	}
	if d := approx.Diff(vals(got2), vals(want2), 1e-12); d != "" {
		t.Errorf("second order (h0's gradient of W's): %s", d)
	}
	if looped >= unrolled {
		t.Errorf("the loop's backward ran %d products, the unrolled one's %d: want fewer", looped, unrolled)
	}
	got, checkpointed, _ := run(true, true)
	for i, name := range []string{"W", "V", "h0", "U", "the bias"} {
		if d := approx.Diff(vals(got[i]), vals(want[i]), 1e-12); d != "" {
			t.Errorf("checkpointed, gradient of %s: %s", name, d)
		}
	}
	t.Logf("products in the backward pass: unrolled %d, loop %d, checkpointed loop %d", unrolled, looped, checkpointed)
}
