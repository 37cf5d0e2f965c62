package main

import (
	"io"
	"math/rand/v2"
	"testing"

	"github.com/eagerflow/eagerflow/tensor"
)

// BenchmarkGPTStep times one training step (forward, backward, AdamW) of the
// example's default model on a random byte batch.
func BenchmarkGPTStep(b *testing.B) {
	c := defaults()
	c.progress = io.Discard
	model := newGPT(tensor.NewRNG(1), c)
	opt := newOpt(c)
	text := make([]byte, 100000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range text {
		text[i] = byte(32 + r.IntN(90))
	}
	x, y := batch(r, text, c.batch, c.context)
	trainStep(model, opt, x, y)
	for b.Loop() {
		trainStep(model, opt, x, y)
	}
}
