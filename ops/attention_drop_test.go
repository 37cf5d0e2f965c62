package ops_test

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// AttentionDropout is the composition it stands for, the same mask:
// AttentionWeights, DropoutAt from the same draws (from a starts slot,
// or from the offset alone: RandBernoulliAt's), MatMul, causal or not,
// with a key-padding mask tensor or not;
// its gradients are checked against finite differences (to second order
// in the conformance table); bad rates and starts are refused.
func TestAttentionDropout(t *testing.T) {
	r := tensor.NewRNG(8)
	q, k, v := tensor.RandNormal(r, tensor.Float64, 2, 3, 5, 4), tensor.RandNormal(r, tensor.Float64, 2, 3, 7, 4), tensor.RandNormal(r, tensor.Float64, 2, 3, 7, 6)
	starts := tensor.FromSlice([]int64{12, 3})
	key := [2]uint32{9, 10}
	padding := tensor.FromSlice([]bool{true, true, false, true, true, true, false, true, true, true, true, true, true, false}, 2, 1, 1, 7) // each sequence's keys
	for _, causal := range []bool{false, true} {
		for _, st := range []*tensor.Tensor{nil, starts} {
			mask := padding
			if st == nil {
				mask = nil
			}
			got := ops.AttentionDropout(q, k, v, mask, causal, 0, 0.35, st, 1, 20, key)
			w := ops.AttentionWeights(q, k, mask, causal, 0)
			var dropped *tensor.Tensor
			if st != nil {
				dropped = ops.DropoutAt(w, 0.35, st, 1, 20, key)
			} else {
				keep := tensor.RandBernoulliAt(w.Device(), key, 20, tensor.Float64, 0.65, w.Shape()...)
				dropped = ops.Mul(w, ops.Mul(keep, tensor.Scalar(1/0.65)))
			}
			want := ops.MatMul(dropped, v)
			g, wv := tensor.ToSlice[float64](got), tensor.ToSlice[float64](want)
			zeros := 0
			for i := range wv {
				if math.Abs(g[i]-wv[i]) > 1e-12 {
					t.Fatalf("causal %v, starts %v: element %d is %v, the composition gives %v", causal, st != nil, i, g[i], wv[i])
				}
			}
			for _, x := range tensor.ToSlice[float64](dropped) {
				if x == 0 {
					zeros++
				}
			}
			if zeros == 0 {
				t.Fatalf("causal %v: no weight dropped", causal)
			}
		}
	}
	runGradients(t, []gradCase{
		{"AttentionDropout", func(x []T) T { return ops.AttentionDropout(x[0], x[1], x[2], nil, true, 0, 0.4, nil, 0, 5, key) }, []T{q, k, v}},
		{"AttentionDropout from starts", func(x []T) T { return ops.AttentionDropout(x[0], x[1], x[2], nil, false, 0.3, 0.2, starts, 0, 0, key) }, []T{q, k, v}},
		{"AttentionDropout masked", func(x []T) T { return ops.AttentionDropout(x[0], x[1], x[2], padding, true, 0, 0.2, starts, 1, 3, key) }, []T{q, k, v}},
	}, nil, nil)
	runBadInput(t, []badInput{
		{"a rate of 0", func() { ops.AttentionDropout(q, k, v, nil, false, 0, 0, nil, 0, 0, key) }, tensor.ErrValue, "outside (0, 1)"},
		{"a rate of 1", func() { ops.AttentionDropout(q, k, v, nil, false, 0, 1, nil, 0, 0, key) }, tensor.ErrValue, "outside (0, 1)"},
		{"float starts", func() { ops.AttentionDropout(q, k, v, nil, false, 0, 0.5, tensor.FromSlice([]float64{1}), 0, 0, key) }, tensor.ErrShape, "int64 vector"},
		{"a slot past starts", func() { ops.AttentionDropout(q, k, v, nil, false, 0, 0.5, starts, 2, 0, key) }, tensor.ErrShape, "slot 2"},
		{"keys of another width", func() { ops.AttentionDropout(q, v, v, nil, false, 0, 0.5, nil, 0, 0, key) }, tensor.ErrShape, ""},
		{"a nil value", func() { ops.AttentionDropout(q, k, nil, nil, false, 0, 0.5, nil, 0, 0, key) }, tensor.ErrArity, "nil"},
		{"a float mask", func() {
			ops.AttentionDropout(q, k, v, tensor.Zeros(tensor.Float64, 5, 7), false, 0, 0.5, nil, 0, 0, key)
		}, tensor.ErrShape, "mask"},
		{"a mask of other keys", func() { ops.AttentionDropout(q, k, v, tensor.Zeros(tensor.Bool, 5, 6), false, 0, 0.5, nil, 0, 0, key) }, tensor.ErrShape, "mask"},
		{"a backward of another log-sum-exp", func() {
			a := ops.AttentionDropoutAttrs{AttentionAttrs: ops.AttentionAttrs{Scale: 0.5}, Rate: 0.5, Key: key}
			out := tensor.Zeros(tensor.Float64, 2, 3, 5, 6)
			eager.Run(eager.Lookup("ScaledDotProductAttentionDropoutBackprop"), a, q, k, v, out, tensor.Zeros(tensor.Float64, 2, 3, 4), out, tensor.Zeros(tensor.Float64, 2, 3, 5))
		}, tensor.ErrShape, "log-sum-exp"},
	})
}
