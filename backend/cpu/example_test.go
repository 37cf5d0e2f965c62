package cpu_test

import (
	"fmt"

	_ "github.com/eagerflow/eagerflow/backend/cpu" // registers the CPU kernels
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The package is used by importing it: its kernels register themselves,
// and ops on CPU tensors find them. (Package tape imports it, so anything
// that trains has them already.)
func Example() {
	x := tensor.FromSlice([]float32{-1, 0, 2}, 3)
	fmt.Println(ops.Relu(x))
	fmt.Println(len(eager.Lookup("MatMul").KernelKinds(tensor.Float32)) > 0)
	// Output:
	// [0. 0. 2.] float32[3]
	// true
}
