package profile_test

import (
	"fmt"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/profile"
	"github.com/eagerflow/eagerflow/tensor"
)

// Profile a few ops and read the calls per op (the table has their times
// too; WriteTraceFile writes the timeline for Perfetto).
func Example() {
	x := tensor.RandNormal(tensor.NewRNG(1), tensor.Float32, 32, 32)
	if err := profile.Start(); err != nil {
		panic(err)
	}
	for range 2 {
		ops.Relu(ops.MatMul(x, x))
	}
	p, err := profile.Stop()
	if err != nil {
		panic(err)
	}
	calls := map[string]int{}
	for _, t := range p.Totals() { // heaviest first
		calls[t.Op] += t.Calls
	}
	fmt.Println(calls)
	// Output:
	// map[MatMul:2 Relu:2]
}
