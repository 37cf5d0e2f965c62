package model

import (
	"testing"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/tensor"
)

// The GPT's training step traced into a graph follows the eager step: the
// same losses over a few steps (gradients not clipped, in both), with
// dropout too (the graph draws each step's masks where the eager step's
// RNGs would).
func TestTracedStepFollowsEager(t *testing.T) {
	for _, dropout := range []float64{0, 0.1} {
		tracedStepFollowsEager(t, Config{Layers: 2, Heads: 2, Dim: 16, Context: 12, Dropout: dropout})
	}
}

func tracedStepFollowsEager(t *testing.T, c Config) {
	v := make([]int32, 3*12)
	for i := range v {
		v[i] = int32(32 + (i*7)%90)
	}
	x := tensor.FromSlice(v, 3, 12)
	y := tensor.FromSlice(append(v[1:], 33), 3, 12)
	var losses [2][]float64
	for i, traced := range []bool{false, true} {
		m := New(tensor.NewRNG(1), c)
		opt := nn.NewAdamW(nn.Constant(1e-2), 0.1)
		step := nn.TrainStep(m, Loss, opt)
		if traced {
			step = nn.TracedTrainStep(m, Loss, opt)
		}
		for range 4 {
			l, _, err := step(data.Element{x, y})
			if err != nil {
				t.Fatal(err)
			}
			losses[i] = append(losses[i], l)
		}
	}
	for i := range losses[0] {
		if d := losses[0][i] - losses[1][i]; d > 1e-5 || d < -1e-5 {
			t.Fatalf("dropout %v: losses eager %v, traced %v", c.Dropout, losses[0], losses[1])
		}
	}
	if !(losses[1][3] < losses[1][0]) {
		t.Errorf("dropout %v: traced losses %v do not fall", c.Dropout, losses[1])
	}
}

// In inference a model with dropout is deterministic.
func TestInferenceIsDeterministic(t *testing.T) {
	m := New(tensor.NewRNG(1), Config{Layers: 1, Heads: 2, Dim: 8, Context: 4, Dropout: 0.1})
	x := tensor.FromSlice([]int32{1, 2, 3, 4}, 1, 4)
	nn.SetTraining(m, false)
	a, b := m.Forward(x), m.Forward(x)
	if d := tensor.ToSlice[float32](a)[0] - tensor.ToSlice[float32](b)[0]; d != 0 {
		t.Error("inference is not deterministic")
	}
}
