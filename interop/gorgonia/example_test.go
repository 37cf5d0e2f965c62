package gorgonia_test

import (
	"fmt"

	gt "gorgonia.org/tensor"

	_ "github.com/eagerflow/eagerflow/backend/cpu" // the ops' CPU kernels
	"github.com/eagerflow/eagerflow/interop/gorgonia"
	"github.com/eagerflow/eagerflow/ops"
)

// A Gorgonia Dense into eagerflow, through an op, and back.
func Example() {
	d := gt.New(gt.WithShape(2, 2), gt.WithBacking([]float64{1, 2, 3, 4}))
	x, err := gorgonia.FromDense(d) // shares d's memory
	if err != nil {
		fmt.Println(err)
		return
	}
	y := ops.MatMul(x, x)
	back, err := gorgonia.ToDense(y)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(back.Shape(), back.Data())
	// Output: (2, 2) [7 10 15 22]
}
