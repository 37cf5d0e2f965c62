package tensor_test

import (
	"fmt"

	"github.com/eagerflow/eagerflow/tensor"
)

// Tensors from Go slices, scalars, ranges and the seeded RNG; printed as
// NumPy prints arrays; read back as Go slices.
func Example() {
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	fmt.Println(x)
	fmt.Println(x.DType(), x.Shape(), x.NumElements())
	fmt.Println(tensor.Arange[int64](0, 10, 3), tensor.Scalar(2.5))

	// The same seed gives the same numbers on every machine.
	a := tensor.RandUniform(tensor.NewRNG(7), tensor.Float64, 0, 1, 3)
	b := tensor.RandUniform(tensor.NewRNG(7), tensor.Float64, 0, 1, 3)
	fmt.Println(tensor.ToSlice[float64](a)[0] == tensor.ToSlice[float64](b)[0])

	// A transpose is a new layout over the same buffer; Contiguous copies.
	t := x.View(tensor.Shape{3, 2}, tensor.Layout{0, 1})
	fmt.Println(tensor.ToSlice[float32](t.Contiguous()))
	// Output:
	// [[1. 2. 3.]
	//  [4. 5. 6.]] float32[2 3]
	// float32 [2 3] 6
	// [0 3 6 9] int64[4] 2.5 float64[]
	// true
	// [1 4 2 5 3 6]
}
