package control_test

import (
	"fmt"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A loop whose trip count depends on a tensor's value, differentiated:
// halve x until it drops below 1, and ask how the result moves with x.
func ExampleWhile() {
	x := tensor.Scalar(float32(10))
	tp := tape.New()
	tp.Watch(x)
	out := control.While(
		func(v []*tensor.Tensor) *tensor.Tensor { return ops.Ge(v[0], tensor.Scalar(1)) },
		func(v []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Mul(v[0], tensor.Scalar(0.5))} },
		[]*tensor.Tensor{x})
	fmt.Println(out[0].Float(), tp.Gradient(out[0], x)[0].Float()) // 10/16, 1/16
	// Output: 0.625 0.0625
}

// A running sum over the rows of xs, with each step's value kept: the loop
// recurrent networks are written with.
func ExampleScan() {
	xs := tensor.FromSlice([]float32{1, 2, 3, 4}, 4, 1)
	carry, ys := control.Scan(func(c, x []*tensor.Tensor) ([]*tensor.Tensor, []*tensor.Tensor) {
		s := ops.Add(c[0], x[0])
		return []*tensor.Tensor{s}, []*tensor.Tensor{s}
	}, []*tensor.Tensor{tensor.Zeros(tensor.Float32, 1)}, []*tensor.Tensor{xs})
	fmt.Println(carry[0], ys[0])
	// Output:
	// [10.] float32[1] [[ 1.]
	//  [ 3.]
	//  [ 6.]
	//  [10.]] float32[4 1]
}

// A branch chosen by a tensor's value; on a tape, the branch taken is what
// the gradient goes through.
func ExampleCond() {
	relu := func(x *tensor.Tensor) *tensor.Tensor {
		return control.Cond(ops.Gt(x, tensor.Scalar(0)),
			func() []*tensor.Tensor { return []*tensor.Tensor{x} },
			func() []*tensor.Tensor { return []*tensor.Tensor{ops.ZerosLike(x)} })[0]
	}
	fmt.Println(relu(tensor.Scalar(3.0)).Float(), relu(tensor.Scalar(-3.0)).Float())
	// Output: 3 0
}
