package move_test

import (
	"fmt"

	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/tensor"
)

// How a kernel that works along one axis views its operand: a reduction
// over axis 1 of a [2 3 4] tensor is 2 outer blocks of 3 rows of 4.
func ExampleSplit() {
	outer, n, inner := move.Split(tensor.Shape{2, 3, 4}, 1)
	fmt.Println(outer, n, inner)
	// An index tensor's values, as the gather and scatter kernels read them.
	fmt.Println(move.IndexValues(tensor.FromSlice([]int32{2, 0, 1})))
	// Output:
	// 2 3 4
	// [2 0 1]
}
