package eager_test

import (
	"errors"
	"fmt"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Ops panic on a caller's mistake, before anything is written; Catch turns
// the panic into an error that says what, where and why, and whose kind
// errors.Is can test.
func ExampleCatch() {
	a := tensor.Zeros(tensor.Float32, 2, 3)
	b := tensor.Zeros(tensor.Float32, 4, 5)
	err := tensor.Catch(func() { ops.MatMul(a, b) })
	fmt.Println(err)
	fmt.Println(errors.Is(err, tensor.ErrShape))

	var te *tensor.Error
	if errors.As(err, &te) {
		fmt.Println(te.Op)
	}
	// Output:
	// ops: MatMul: contracting dimensions differ: 3 and 4 (inputs float32[2 3], float32[4 5]; attrs transpose_a=false transpose_b=false) at eager/example_catch_test.go:18
	// true
	// MatMul
}

// Every op is registered by name with its declaration and kernels.
func ExampleLookup() {
	op := eager.Lookup("MatMul")
	fmt.Println(op.Name, len(op.KernelKinds(tensor.Float32)) > 0)
	// Output: MatMul true
}
