package graph_test

import (
	"fmt"

	_ "github.com/eagerflow/eagerflow/backend/cpu" // the ops' CPU kernels
	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// A graph built by hand (control/trace builds them from Go functions):
// y = x*x + 1, printed, then executed twice.
func Example() {
	g := &graph.Graph{}
	x := g.Input("x")
	sq := g.Apply(eager.Lookup("Mul"), nil, 1, x, x).Out(0)
	y := g.Apply(eager.Lookup("Add"), nil, 1, sq, g.Constant(tensor.FromSlice([]float32{1}))).Out(0)
	g.Result = []graph.Output{y}
	fmt.Print(g)
	for _, v := range []float32{2, 3} {
		out, err := graph.Execute(g, tensor.FromSlice([]float32{v}))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(out[0])
	}
	// Output:
	// %0 = Placeholder x
	// %1 = Mul(%0, %0)
	// %2 = Const [1.] float32[1]
	// %3 = Add(%1, %2)
	// results: %3
	// [5.] float32[1]
	// [10.] float32[1]
}
