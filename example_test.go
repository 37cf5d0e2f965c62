package eagerflow_test

import (
	"fmt"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The tour in one program: ops that run at once, a gradient through a Go
// loop, the same function traced into a graph, and a mistake as an error.
func Example() {
	x := tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2)
	y := ops.Div(ops.MatMul(x, x), tensor.Scalar(2)) // 2 becomes float32
	fmt.Printf("%v\n", y)
	fmt.Println(ops.Index(y, 1, ops.Until(1)))

	// d/dw of w^(2^3), squaring three times in a loop the tape records.
	w := tape.NewVariable("w", tensor.Scalar(float32(1.1)))
	tp := tape.New()
	p := control.Fori(0, 3, func(_ *tensor.Tensor, v []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{ops.Mul(v[0], v[0])}
	}, []*tensor.Tensor{w.Value()})[0]
	fmt.Printf("%.4g %.4g\n", p.Float(), tp.Gradient(p, w.Value())[0].Float()) // 1.1^8, 8*1.1^7

	// The same function, traced once and run from its graph after.
	sq := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor {
		return []*tensor.Tensor{ops.Sum(ops.Mul(a[0], a[0]))}
	})
	for _, v := range []float32{1, 2} {
		out, _ := sq.Call(tensor.FromSlice([]float32{v, v}))
		fmt.Print(out[0].Float(), " ")
	}
	fmt.Println("traces:", sq.Traces())

	fmt.Println(tensor.Catch(func() { ops.MatMul(x, tensor.Zeros(tensor.Float32, 3, 1)) }) != nil)
	// Output:
	// [[ 3.5  5. ]
	//  [ 7.5 11. ]] float32[2 2]
	// [7.5] float32[1]
	// 2.144 15.59
	// 2 8 traces: 1
	// true
}
