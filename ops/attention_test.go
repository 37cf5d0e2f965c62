package ops_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// attentionByOps is attention spelled out: the score matrix, masked to
// -inf, softmax, the product.
func attentionByOps(q, k, v, mask *tensor.Tensor, causal bool, scale float64) *tensor.Tensor {
	s := ops.Mul(ops.MatMulT(q, k, false, true), ops.ScalarLike(q, scale))
	tq, tk := q.Dim(-2), k.Dim(-2)
	keep := mask
	if causal {
		c := ops.Ge(ops.Reshape(tensor.Arange(0, float64(tq), 1), tq, 1), ops.Reshape(tensor.Arange(0, float64(tk), 1), 1, tk))
		if keep == nil {
			keep = c
		} else {
			keep = ops.LogicalAnd(keep, c)
		}
	}
	if keep != nil {
		s = ops.Where(keep, s, ops.ScalarLike(s, math.Inf(-1)))
	}
	return ops.MatMul(ops.Softmax(s, -1), v)
}

// The attention op equals the ops spelled out, in value and in the
// gradients of query, key and value: with and without a mask (shared or
// per batch), causal or not, more keys than a block, fewer queries than
// keys, both dtypes.
func TestAttentionMatchesOps(t *testing.T) {
	r := tensor.NewRNG(6)
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		tol := map[tensor.DType]float64{tensor.Float64: 1e-12, tensor.Float32: 3e-5}[dt]
		for i, c := range []struct {
			batch      []int
			tq, tk     int
			d, dv      int
			causal     bool
			mask, full bool
		}{
			{[]int{2}, 5, 5, 4, 3, false, false, false},
			{[]int{2, 3}, 7, 7, 8, 8, true, false, false},
			{[]int{1}, 4, 150, 6, 5, false, true, false}, // 150 keys: three blocks
			{[]int{2, 2}, 130, 130, 4, 4, true, true, true},
			{nil, 3, 9, 2, 3, false, false, false},
		} {
			name := fmt.Sprintf("%v case %d", dt, i)
			sh := func(t, d int) []int { return append(append([]int(nil), c.batch...), t, d) }
			q := tensor.RandNormal(r, dt, sh(c.tq, c.d)...)
			k := tensor.RandNormal(r, dt, sh(c.tk, c.d)...)
			v := tensor.RandNormal(r, dt, sh(c.tk, c.dv)...)
			var mask *tensor.Tensor
			if c.mask {
				ms := []int{c.tq, c.tk}
				if c.full {
					ms = sh(c.tq, c.tk)
				}
				// Keep about two keys in three, and key 0 always (no row empty).
				u := tensor.ToSlice[float64](tensor.RandUniform(r, tensor.Float64, 0, 1, ms...))
				keep := make([]bool, len(u))
				for j := range keep {
					keep[j] = u[j] < 0.67 || j%c.tk == 0
				}
				mask = tensor.FromSlice(keep, ms...)
			}
			scale := 1 / math.Sqrt(float64(c.d))
			var outs [2]*tensor.Tensor
			var grads [2][]*tensor.Tensor
			for j, f := range []func() *tensor.Tensor{
				func() *tensor.Tensor { return attentionByOps(q, k, v, mask, c.causal, scale) },
				func() *tensor.Tensor { return ops.Attention(q, k, v, mask, c.causal, 0) },
			} {
				tp := tape.New()
				tp.Watch(q, k, v)
				outs[j] = f()
				w := tensor.RandUniform(tensor.NewRNG(4), dt, -1, 1, outs[j].Shape()...)
				grads[j] = tp.Gradient(ops.Sum(ops.Mul(outs[j], w)), q, k, v)
			}
			diff(t, name+" value", outs[1], outs[0], tol)
			for j, what := range []string{"query", "key", "value"} {
				diff(t, name+" gradient of the "+what, grads[1][j], grads[0][j], 10*tol)
			}
		}
	}
}

// A query whose every key is masked gives NaN, as softmax of nothing does.
func TestAttentionOfNothingIsNaN(t *testing.T) {
	q := tensor.FromSlice([]float64{1, 2, 3, 4}, 2, 2)
	mask := tensor.FromSlice([]bool{true, false, false, false}, 2, 2)
	got := tensor.ToSlice[float64](ops.Attention(q, q, q, mask, false, 0))
	if math.IsNaN(got[0]) || !math.IsNaN(got[2]) || !math.IsNaN(got[3]) {
		t.Errorf("got %v, want a number for the first query and NaN for the second", got)
	}
	// A loss that leaves the NaN row out has finite gradients: the row of
	// nothing sends nothing back.
	tp := tape.New()
	tp.Watch(q)
	out := ops.Attention(q, q, q, mask, false, 0)
	g := tp.Gradient(ops.Sum(ops.Where(ops.IsFinite(out), out, ops.ScalarLike(out, 0))), q)[0]
	for i, v := range tensor.ToSlice[float64](g) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("gradient element %d is %g", i, v)
		}
	}
}

func TestAttentionBadInputs(t *testing.T) {
	q := tensor.Zeros(tensor.Float32, 2, 3, 4)
	for _, c := range []struct {
		name string
		call func()
		kind error
		says string
	}{
		{"feature sizes differ", func() { ops.Attention(q, tensor.Zeros(tensor.Float32, 2, 3, 5), q, nil, false, 0) }, tensor.ErrShape, "last dimension"},
		{"batches differ", func() { ops.Attention(q, tensor.Zeros(tensor.Float32, 3, 3, 4), q, nil, false, 0) }, tensor.ErrShape, "batch"},
		{"ranks differ", func() { ops.Attention(q, tensor.Zeros(tensor.Float32, 3, 4), q, nil, false, 0) }, tensor.ErrRank, "rank"},
		{"a float mask", func() { ops.Attention(q, q, q, tensor.Zeros(tensor.Float32, 3, 3), false, 0) }, tensor.ErrShape, "mask"},
		{"a mask of another shape", func() { ops.Attention(q, q, q, tensor.Zeros(tensor.Bool, 3, 4), false, 0) }, tensor.ErrShape, "mask"},
		{"integer operands", func() {
			x := tensor.Zeros(tensor.Int32, 2, 3, 4)
			ops.Attention(x, x, x, nil, false, 0)
		}, tensor.ErrDType, ""},
		{"nil value", func() { ops.Attention(q, q, nil, nil, false, 0) }, tensor.ErrArity, "input 2 is nil"},
	} {
		err := tensor.Catch(c.call)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.name, err, c.kind, c.says)
		}
	}
}

// AttentionWeights times v is Attention, its rows sum to one and a causal
// row puts nothing after its position; bad shapes are errors.
func TestAttentionWeights(t *testing.T) {
	r := tensor.NewRNG(9)
	q, k, v := tensor.RandNormal(r, tensor.Float64, 2, 5, 4), tensor.RandNormal(r, tensor.Float64, 2, 5, 4), tensor.RandNormal(r, tensor.Float64, 2, 5, 3)
	w := ops.AttentionWeights(q, k, nil, true, 0)
	diff(t, "weights·v", ops.MatMul(w, v), ops.Attention(q, k, v, nil, true, 0), 1e-12)
	diff(t, "row sums", ops.Sum(w, -1), tensor.Ones(tensor.Float64, 2, 5), 1e-12)
	ws := tensor.ToSlice[float64](w)
	for b := range 2 {
		for i := range 5 {
			for j := i + 1; j < 5; j++ {
				if ws[(b*5+i)*5+j] != 0 {
					t.Fatalf("causal weight (%d, %d) = %v", i, j, ws[(b*5+i)*5+j])
				}
			}
		}
	}
	for name, f := range map[string]func(){
		"features differ": func() { ops.AttentionWeights(q, tensor.Zeros(tensor.Float64, 2, 5, 3), nil, false, 0) },
		"a float mask":    func() { ops.AttentionWeights(q, k, tensor.Zeros(tensor.Float64, 5, 5), false, 0) },
	} {
		if err := tensor.Catch(f); !errors.Is(err, tensor.ErrShape) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Half inputs attend in float32 and round once: bfloat16 and float16
// give float32's result rounded, and their gradients keep their dtype.
func TestAttentionHalf(t *testing.T) {
	r := tensor.NewRNG(2)
	q, k, v := tensor.RandNormal(r, tensor.Float32, 2, 5, 4), tensor.RandNormal(r, tensor.Float32, 2, 7, 4), tensor.RandNormal(r, tensor.Float32, 2, 7, 3)
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		h := func(x *tensor.Tensor) *tensor.Tensor { return ops.Cast(x, dt) }
		f := func(x *tensor.Tensor) *tensor.Tensor { return ops.Cast(x, tensor.Float32) }
		qh, kh, vh := h(q), h(k), h(v)
		tp := tape.New()
		tp.Watch(qh, kh, vh)
		got := ops.Attention(qh, kh, vh, nil, true, 0)
		want := h(ops.Attention(f(qh), f(kh), f(vh), nil, true, 0))
		diff(t, fmt.Sprint(dt), f(got), f(want), 0)
		for i, g := range tp.Gradient(ops.Sum(got), qh, kh, vh) {
			if g == nil || g.DType() != dt {
				t.Errorf("%v: gradient %d is %v", dt, i, g)
			}
		}
	}
}

// A mask broadcasts over the queries and the batch dimensions as NumPy
// would (a sequence's key padding for its heads, read in place; a mask a
// head shared by the sequences or of a lower rank, broadcast out first):
// the op equals itself with the mask broadcast out (ops.BroadcastTo), in
// value and gradients, bit for bit, causal or not; AttentionWeights too.
// A mask that does not broadcast is a shape error naming the forms.
func TestAttentionMaskBroadcasts(t *testing.T) {
	r := tensor.NewRNG(9)
	const n, h, tq, tk, d = 2, 3, 4, 6, 5
	q, k, v := tensor.RandNormal(r, tensor.Float64, n, h, tq, d), tensor.RandNormal(r, tensor.Float64, n, h, tk, d), tensor.RandNormal(r, tensor.Float64, n, h, tk, d)
	draw := func(shape ...int) *tensor.Tensor {
		keep := make([]bool, tensor.Shape(shape).NumElements())
		for i := range keep {
			keep[i] = i%4 != 1 || i%tk == 0
		}
		return tensor.FromSlice(keep, shape...)
	}
	run := func(mask *tensor.Tensor, causal bool) []*tensor.Tensor {
		tp := tape.New()
		tp.Watch(q, k, v)
		out := ops.Attention(q, k, v, mask, causal, 0)
		w := ops.AttentionWeights(q, k, mask, causal, 0)
		return append([]*tensor.Tensor{out, w}, tp.Gradient(ops.Sum(ops.Mul(out, out)), q, k, v)...)
	}
	for _, shape := range [][]int{{1, tk}, {n, 1, 1, tk}, {n, 1, tq, tk}, {n, h, 1, tk}, {1, 1, 1, tk}, {1, h, tq, tk}, {h, tq, tk}, {h, 1, tk}, {1, h, 1, tk}} {
		for _, causal := range []bool{false, true} {
			m := draw(shape...)
			got, want := run(m, causal), run(ops.BroadcastTo(m, n, h, tq, tk), causal)
			for i := range got {
				if fmt.Sprint(tensor.ToSlice[float64](got[i])) != fmt.Sprint(tensor.ToSlice[float64](want[i])) {
					t.Fatalf("mask %v causal=%v: result %d (out, weights, dq, dk, dv) differs from the broadcast mask's", shape, causal, i)
				}
			}
		}
	}
	for _, shape := range [][]int{{3, h, tq, tk}, {2, tq, tk}, {n, h, 2, tk}, {n, h, tq, 1}, {1, n, h, tq, tk}} {
		if err := tensor.Catch(func() { ops.Attention(q, k, v, draw(shape...), false, 0) }); !errors.Is(err, tensor.ErrShape) || !strings.Contains(err.Error(), "broadcast to the batch's") {
			t.Errorf("mask %v: %v, want a shape error naming the forms", shape, err)
		}
		if err := tensor.Catch(func() { ops.AttentionWeights(q, k, draw(shape...), false, 0) }); !errors.Is(err, tensor.ErrShape) {
			t.Errorf("AttentionWeights, mask %v: %v", shape, err)
		}
	}
}
