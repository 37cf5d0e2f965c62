package model

import (
	"bytes"
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// greedyEager continues prompt by n bytes, each the argmax of Decode's
// logits with the KV cache: the reference of the traced loop.
func greedyEager(m *GPT, prompt []byte, n int) []byte {
	caches := m.NewCaches()
	out := append([]byte(nil), prompt...)
	ids := make([]int32, len(prompt))
	for i, b := range prompt {
		ids[i] = int32(b)
	}
	next := tensor.FromSlice(ids, 1, len(ids))
	for range n {
		logits := m.Decode(next, caches)
		t := logits.Dim(1)
		last := ops.Slice(logits, []int{0, t - 1, 0}, []int{1, t, Vocab}, nil)
		b := byte(tensor.ToSlice[int64](ops.ArgMax(ops.Reshape(last, Vocab), 0))[0])
		out = append(out, b)
		next = tensor.FromSlice([]int32{int32(b)}, 1, 1)
	}
	return out
}

// The traced generation loop takes the same bytes as eager greedy
// decoding; sampling is deterministic for a seed, varies with it, and
// reuses the graph (one trace per sampling choice).
func TestGenerateTracedMatchesEager(t *testing.T) {
	m := New(tensor.NewRNG(4), Config{Layers: 2, Heads: 2, Dim: 16, Context: 24})
	prompt := []byte("func ")
	got, err := m.Generate(prompt, 12, 0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := greedyEager(m, prompt, 12); !bytes.Equal(got, want) {
		t.Fatalf("traced greedy %q, eager %q", got, want)
	}
	a, _ := m.Generate(prompt, 15, 1.5, 40, 7)
	b, _ := m.Generate(prompt, 15, 1.5, 40, 7)
	c, _ := m.Generate([]byte("package "), 15, 1.5, 40, 8)
	if !bytes.Equal(a, b) || bytes.Equal(a[len(prompt):], c[len("package "):]) || !bytes.HasPrefix(c, []byte("package ")) {
		t.Errorf("samples %q, %q (same seed), %q (another prompt and seed)", a, b, c)
	}
	if _, err := m.Generate([]byte("x"), 20, 0, 0, 1); err != nil {
		t.Fatal(err)
	}
	if f, _ := m.generators.Load(sampling{greedy: true}); f.(*trace.Function).Traces() != 1 {
		t.Errorf("%d traces for two greedy calls of other lengths", f.(*trace.Function).Traces())
	}
	if _, err := m.Generate(prompt, 20, 0, 0, 1); err == nil {
		t.Error("past the context: no error")
	}
}
