package main

import (
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
// gives the eager step's loss and gradients, bitwise.
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
		for i := range want {
			if !slices.Equal(tensor.ToSlice[float32](got[i]), tensor.ToSlice[float32](want[i])) {
				t.Errorf("round %d: output %d differs from eager", round, i)
			}
		}
	}
}
