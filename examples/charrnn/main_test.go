package main

import (
	"math"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func TestCharRNNLearns(t *testing.T) {
	cfg := config{epochs: 6, windows: 256}
	if testing.Short() {
		cfg = config{epochs: 3, windows: 256}
	}
	res, err := run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !(res.loss < res.firstLoss*0.85) {
		t.Errorf("loss went from %.3f to %.3f", res.firstLoss, res.loss)
	}
	if res.traces != 1 {
		t.Errorf("the train step was traced %d times, want once", res.traces)
	}
	if len([]rune(res.sample)) != len("The keeper ")+160 {
		t.Errorf("sample %q", res.sample)
	}
}

// The traced step (Scan over the LSTM, its backward, all in one graph)
// gives the eager step's loss and gradients, bitwise, but for the
// recurrent kernel's: the eager loop takes it as one product over the
// steps (control's Loop.Backward), the graph's loop frame step by step,
// so the two agree to float32's rounding of the sum.
func TestTracedStepMatchesEager(t *testing.T) {
	vocab := slices.Compact(slices.Sorted(slices.Values([]rune(text))))
	m := newModel(vocab)
	f := m.trainStep()
	ids := make([]int32, 0, len(text))
	for _, c := range text {
		ids = append(ids, int32(slices.Index(vocab, c)))
	}
	for round := range 2 { // the tracing call, then a graph call
		x, y := windows(ids, 4, uint64(10+round))
		got, err := f.Call(x, ops.Reshape(y, -1))
		if err != nil {
			t.Fatal(err)
		}
		tp := tape.New()
		loss := nn.SparseSoftmaxCrossEntropy(m.logits(x), ops.Reshape(y, -1))
		want := append([]*tensor.Tensor{loss}, tp.Gradient(loss, nn.Values(m.variables())...)...)
		vars := m.variables()
		for i := range want {
			g, w := tensor.ToSlice[float32](got[i]), tensor.ToSlice[float32](want[i])
			if slices.Equal(g, w) {
				continue
			}
			if i == 0 || vars[i-1].Name() != "lstm/recurrent_kernel" {
				t.Errorf("round %d: output %d differs from eager", round, i)
				continue
			}
			largest := 0.0
			for _, v := range w {
				largest = math.Max(largest, math.Abs(float64(v)))
			}
			for j := range w {
				if math.Abs(float64(g[j]-w[j])) > 1e-5*largest {
					t.Errorf("round %d: the recurrent kernel's gradient, element %d: traced %g, eager %g", round, j, g[j], w[j])
					break
				}
			}
		}
	}
}
