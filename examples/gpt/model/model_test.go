package model

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Generating with the KV cache gives the logits the whole prefix gives
// without it, token after token (a prompt of several first).
func TestCachedLogitsMatchUncached(t *testing.T) {
	g := New(tensor.NewRNG(1), Config{Layers: 2, Heads: 2, Dim: 16, Context: 12})
	seq := []int32{'f', 'u', 'n', 'c', ' ', 'm', 'a', 'i', 'n', '(', ')', '{'}
	caches := g.NewCaches()
	at := 0
	for _, chunk := range []int{4, 1, 1, 1, 3, 1, 1} {
		got := g.Decode(tensor.FromSlice(seq[at:at+chunk], 1, chunk), caches)
		at += chunk
		full := g.Forward(tensor.FromSlice(seq[:at], 1, at))
		want := ops.Slice(full, []int{0, at - chunk, 0}, []int{1, at, Vocab}, nil)
		gs, ws := tensor.ToSlice[float32](got), tensor.ToSlice[float32](want)
		for i := range ws {
			if math.Abs(float64(gs[i]-ws[i])) > 1e-4 {
				t.Fatalf("after %d tokens: logit %d is %g cached, %g without", at, i, gs[i], ws[i])
			}
		}
	}
	if err := tensor.Catch(func() { g.Decode(tensor.FromSlice([]int32{1}, 1, 1), caches) }); err == nil {
		t.Error("a position past the context: no error")
	}
}

// In mixed bfloat16 the model computes its blocks in bfloat16 (the
// variables float32, the logits float32) and still learns.
func TestMixedBFloat16Learns(t *testing.T) {
	m := New(tensor.NewRNG(2), Config{Layers: 1, Heads: 2, Dim: 16, Context: 8, Compute: tensor.BFloat16})
	opt := NewOptimizer(60)
	v := make([]int32, 4*8)
	for i := range v {
		v[i] = int32('a' + i%5)
	}
	x := tensor.FromSlice(v, 4, 8)
	y := tensor.FromSlice(append(v[1:], 'a'+int32(len(v)%5)), 4, 8)
	if logits := m.Forward(x); logits.DType() != tensor.Float32 {
		t.Fatalf("logits are %v", logits.DType())
	}
	var first, last float64
	for i := range 60 {
		l, err := m.TrainStep(opt, x, y)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = l
		}
		last = l
	}
	if !(last < first/2) {
		t.Errorf("loss %v -> %v", first, last)
	}
	for _, v := range m.Variables() {
		if v.Value().DType() != tensor.Float32 {
			t.Fatalf("%s is %v", v.Name(), v.Value().DType())
		}
	}
}

// TrainStep, its clipping inside Adam's step and its bfloat16 model's
// gradients half, takes the steps of a loop that differentiates into
// float32 gradients, clips them (nn.ClipByGlobalNormTensor) and applies
// AdamW: the same arithmetic, to float32's rounding (the norm's sums
// are grouped by the gradients' dtypes), with the clip engaged; for a
// float32 model as well.
func TestTrainStepIsTheClippingLoop(t *testing.T) {
	v := make([]int32, 2*8)
	for i := range v {
		v[i] = int32(32 + (i*7+i/5)%90)
	}
	x, y := tensor.FromSlice(v, 2, 8), tensor.FromSlice(append(v[1:], 32), 2, 8)
	for _, compute := range []tensor.DType{tensor.Float32, tensor.BFloat16} {
		c := Config{Layers: 2, Heads: 2, Dim: 16, Context: 8, Compute: compute}
		stepped, looped := New(tensor.NewRNG(3), c), New(tensor.NewRNG(3), c)
		opts := [2]*nn.Adam{NewOptimizer(20), NewOptimizer(20)}
		for range 4 {
			if _, err := stepped.TrainStep(opts[0], x, y); err != nil {
				t.Fatal(err)
			}
			tp := tape.New(tape.Options{})
			vars := looped.Variables()
			grads := tp.Gradient(Loss(looped.Forward(x), y), nn.Values(vars)...)
			tp.Stop()
			clipped, norm := nn.ClipByGlobalNormTensor(grads, 1)
			if norm.Float() <= 1 {
				t.Fatalf("%v: the gradients' norm %v is within the bound: nothing clips", compute, norm.Float())
			}
			if err := opts[1].Apply(vars, clipped); err != nil {
				t.Fatal(err)
			}
		}
		for i, v := range stepped.Variables() {
			got, want := tensor.ToSlice[float32](v.Value()), tensor.ToSlice[float32](looped.Variables()[i].Value())
			for j := range want {
				if d := math.Abs(float64(got[j] - want[j])); d > 1e-6*math.Max(1, math.Abs(float64(want[j]))) {
					t.Fatalf("%v: %s[%d] is %v stepped, %v looped", compute, v.Name(), j, got[j], want[j])
				}
			}
		}
	}
}
