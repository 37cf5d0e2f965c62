package trace_test

import (
	"fmt"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// A Go function with a data-dependent loop and branch, traced once and
// then run from its graph.
func ExampleFunction() {
	// collatz counts the steps from n to 1: n/2 when even, 3n+1 when odd.
	collatz := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor {
		one, two := tensor.Scalar(int64(1)), tensor.Scalar(int64(2))
		return control.While(
			func(v []*tensor.Tensor) *tensor.Tensor { return ops.Gt(v[0], one) },
			func(v []*tensor.Tensor) []*tensor.Tensor {
				n := v[0]
				even := ops.Eq(ops.Rem(n, two), tensor.Scalar(int64(0)))
				next := control.Cond(even,
					func() []*tensor.Tensor { return []*tensor.Tensor{ops.Div(n, two)} },
					func() []*tensor.Tensor {
						return []*tensor.Tensor{ops.Add(ops.Mul(n, tensor.Scalar(int64(3))), one)}
					})
				return []*tensor.Tensor{next[0], ops.Add(v[1], one)}
			},
			[]*tensor.Tensor{a[0], tensor.Scalar(int64(0))})[1:]
	})
	for _, n := range []int64{6, 27, 1} {
		steps, err := collatz.Call(tensor.Scalar(n))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%d: %v steps\n", n, steps[0].Item())
	}
	fmt.Println("traces:", collatz.Traces())
	// Output:
	// 6: 8 steps
	// 27: 111 steps
	// 1: 0 steps
	// traces: 1
}
