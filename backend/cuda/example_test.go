package cuda_test

import (
	"fmt"

	"github.com/eagerflow/eagerflow/backend/cuda"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A tensor moved to the GPU, an op and its gradient computed there, and
// the result read back. (The package's tests run it on the emulated GPU
// unless EAGERFLOW_REQUIRE_GPU=1 asks for a real one.)
func ExampleOpen() {
	gpu, err := cuda.Open(0)
	if err != nil {
		fmt.Println(err) // no driver, no GPU: an error, never a crash
		return
	}
	x, err := tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2).To(gpu)
	if err != nil {
		fmt.Println(err)
		return
	}
	tp := tape.New()
	tp.Watch(x)
	y := ops.Sum(ops.MatMul(x, x))
	g := tp.Gradient(y, x)[0]
	fmt.Println(y.Device().Name(), y.Float())
	fmt.Println(g) // printing reads it back to the host
	// Output:
	// gpu:0 54
	// [[ 7. 11.]
	//  [ 9. 13.]] float32[2 2]
}
