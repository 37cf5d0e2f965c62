package notebook_test

import (
	"os"

	_ "github.com/eagerflow/eagerflow/backend/cpu"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/notebook"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The calls a notebook cell makes print text in a program: a tensor as its
// String, a model as its summary. In a GoNB cell the same calls show an
// HTML table and a layer table.
func Example() {
	notebook.Output = os.Stdout // where go test reads an example's output
	x := tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2)
	notebook.Show(ops.MatMul(x, x))
	model := nn.NewSequential(nn.NewDense("dense", tensor.NewRNG(1), 2, 3, nn.DenseOpts{Activation: ops.Relu}))
	if err := notebook.Model(model, x); err != nil {
		panic(err)
	}
	// Output:
	// [[ 7. 10.]
	//  [15. 22.]] float32[2 2]
	// layer                      output shape  parameters
	// Dense dense: 2 -> 3, relu  [2 3]         9
	// input float32 [2 2]; 9 trainable parameters
}
