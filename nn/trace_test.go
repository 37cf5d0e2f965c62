package nn_test

import (
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/tensor"
)

// An RNN traced without a tape becomes one loop frame (its size does not
// grow with the sequence) and computes what it computes eagerly.
func TestRNNTracesIntoAFrame(t *testing.T) {
	rng := tensor.NewRNG(21)
	rnn := &nn.RNN{Cell: nn.NewLSTMCell("lstm", rng, 3, 5, tensor.Float32), ReturnSequences: true}
	f := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor {
		out, state := rnn.Run(a[0], nil)
		return append([]*tensor.Tensor{out}, state...)
	})
	nodes := map[int]int{}
	for _, steps := range []int{4, 9} {
		for call := range 2 {
			x := tensor.RandNormal(rng, tensor.Float32, 2, steps, 3)
			got, err := f.Call(x)
			if err != nil {
				t.Fatal(err)
			}
			out, state := rnn.Run(x, nil)
			want := append([]*tensor.Tensor{out}, state...)
			for i := range want {
				if got[i].String() != want[i].String() {
					t.Errorf("%d steps, call %d, result %d: traced %v, eager %v", steps, call, i, got[i], want[i])
				}
			}
		}
		g := f.Graph(tensor.Zeros(tensor.Float32, 2, steps, 3))
		if !strings.Contains(g.String(), `{"while`) {
			t.Fatalf("no loop frame in the traced RNN:\n%v", g)
		}
		nodes[steps] = len(g.Nodes)
	}
	if nodes[4] != nodes[9] {
		t.Errorf("graph sizes %v grow with the sequence length", nodes)
	}
}
