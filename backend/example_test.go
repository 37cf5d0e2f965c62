package backend_test

import (
	"fmt"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/tensor"
)

// How a kernel reads and writes host tensors: a typed view of their
// memory, and strided copies between raw buffers.
func Example() {
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	out := backend.MustEmptyHost(tensor.Float32, tensor.Shape{3, 2})
	// out[j][i] = x[i][j]: read x along its rows, write out down its columns.
	backend.MoveElems(4, out.HostBytes(), 0, []int{1, 2}, x.HostBytes(), 0, []int{3, 1}, []int{2, 3})
	fmt.Println(backend.HostData[float32](out))
	fmt.Println(out)
	// Output:
	// [1 4 2 5 3 6]
	// [[1. 4.]
	//  [2. 5.]
	//  [3. 6.]] float32[3 2]
}
