package graph_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/internal/nilsweep"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every exported function, and the Graph's methods that take something
// that can be nil, say what was nil.
func TestNilArgumentsAreReported(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2})
	square := func() *graph.Graph {
		g := &graph.Graph{}
		in := g.Input("x")
		g.Result = []graph.Output{in}
		return g
	}
	partitioned, err := graph.Partition(square())
	if err != nil {
		t.Fatal(err)
	}
	fns := []nilsweep.Func{
		{Name: "Execute", Fn: graph.Execute, Valid: []any{square(), []*tensor.Tensor{x}}},
		{Name: "ExecuteWith", Fn: graph.ExecuteWith, Valid: []any{square(), graph.ExecOptions{}, []*tensor.Tensor{x}}},
		{Name: "Owned", Fn: graph.Owned, Valid: []any{square(), []*tensor.Tensor{x}, []*tensor.Tensor{x}}},
		{Name: "Record", Fn: graph.Record, Valid: []any{square(), []*tensor.Tensor{x}}},
		{Name: "RecordTail", Fn: graph.RecordTail, Valid: []any{square(), &graph.Tail{}, []*tensor.Tensor{x}}},
		{Name: "IterationTag", Fn: graph.IterationTag},
		{Name: "Graph.WriteDOT", Fn: func(w io.Writer) error { return square().WriteDOT(w) }, Valid: []any{io.Writer(&bytes.Buffer{})}},
		{Name: "Graph.Placement", Fn: func(g *graph.Graph) int { return len(g.Placement()) }, Valid: []any{square()}},
		{Name: "Graph.StraightLine", Fn: func(g *graph.Graph) bool { return g.StraightLine() }, Valid: []any{square()}},
		{Name: "Partition", Fn: graph.Partition, Valid: []any{square()}},
		{Name: "PartitionWith", Fn: graph.PartitionWith, Valid: []any{square(), graph.PartitionOptions{}}},
		{Name: "Partitioned.Execute", Fn: func(p *graph.Partitioned, args []*tensor.Tensor) error {
			_, err := p.Execute(args...)
			return err
		}, Valid: []any{partitioned, []*tensor.Tensor{x}}},
	}
	builder := "the graph builder takes Outputs and nodes of a graph it made; a trace calls it"
	skip := map[string]string{"SameFusedOperands": "compares two nodes of a fused graph; the fuser's test helper"}
	for _, m := range []string{"Size", "Truncate", "Input", "Constant", "Apply", "Switch", "Merge", "Enter", "Exit", "NextIteration",
		"SetBackEdge", "NewStack", "Push", "Pop", "Optimize", "Prune", "String"} {
		skip["Graph."+m] = builder
	}
	nilsweep.Covered(t, ".", fns, skip, "Graph")
	nilsweep.Sweep(t, fns)
}
