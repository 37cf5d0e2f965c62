package opattr_test

import (
	"fmt"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/tensor"
)

// A kernel's view of a MatMul call's attributes: the product's sizes
// after the transposes they ask for.
func ExampleMatMulAttrs() {
	a := opattr.MatMulAttrs{TransposeB: true}
	m, k, n := a.Dims(tensor.Shape{8, 3}, tensor.Shape{5, 3}) // x·yᵀ
	fmt.Println(a, m, k, n)
	fmt.Println(opattr.SliceAttrs{Start: []int{1}, Limit: []int{7}, Strides: []int{2}})
	// Output:
	// transpose_a=false transpose_b=true 8 3 5
	// start=[1] limit=[7] strides=[2]
}
