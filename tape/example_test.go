package tape_test

import (
	"fmt"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The README's example: a forward pass on the tape, its gradient, an SGD
// step, and a shape error caught as an error.
func Example() {
	x := tensor.FromSlice([]float32{1, 2, 3}, 1, 3)
	w := tape.NewVariable("w", tensor.RandNormal(tensor.NewRNG(1), tensor.Float32, 3, 2))

	tp := tape.New()
	y := ops.Sum(ops.Tanh(ops.MatMul(x, w.Value())))
	g := tp.Gradient(y, w.Value())[0]
	w.AssignScaled(-0.1, g)

	fmt.Printf("%.4v\n", y)
	fmt.Printf("%.4v\n", g)
	err := tensor.Catch(func() { ops.Add(x, w.Value()) })
	fmt.Println(err)
	// Output:
	// -1.9929 float32[]
	// [[0.0001 0.0140]
	//  [0.0002 0.0280]
	//  [0.0003 0.0420]] float32[3 2]
	// ops: Add: shapes [1 3] and [3 2] are not broadcastable (inputs float32[1 3], float32[3 2]) at tape/example_test.go:24
}
