package control

import (
	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/tensor"
)

// Names that moved out of package control in November 2026: tracing to
// package trace (control/trace), the graph and its executor to package
// graph (control/graph). They stay here, deprecated, for at least one
// minor release (CHANGELOG.md).

// Function is trace.Function.
//
// Deprecated: use trace.Function (package control/trace).
type Function = trace.Function

// InputSpec is trace.InputSpec.
//
// Deprecated: use trace.InputSpec (package control/trace).
type InputSpec = trace.InputSpec

// NewFunction is trace.NewFunction.
//
// Deprecated: use trace.NewFunction (package control/trace).
func NewFunction(fn func(args []*tensor.Tensor) []*tensor.Tensor) *Function {
	return trace.NewFunction(fn)
}

// NewFunctionWithSignature is trace.NewFunctionWithSignature.
//
// Deprecated: use trace.NewFunctionWithSignature (package control/trace).
func NewFunctionWithSignature(fn func(args []*tensor.Tensor) []*tensor.Tensor, sig ...InputSpec) *Function {
	return trace.NewFunctionWithSignature(fn, sig...)
}

// RetraceWarning is trace.RetraceWarning.
//
// Deprecated: use trace.RetraceWarning (package control/trace).
const RetraceWarning = trace.RetraceWarning

// Graph is graph.Graph.
//
// Deprecated: use graph.Graph (package control/graph).
type Graph = graph.Graph

// Node is graph.Node.
//
// Deprecated: use graph.Node (package control/graph).
type Node = graph.Node

// NodeKind is graph.NodeKind.
//
// Deprecated: use graph.NodeKind (package control/graph).
type NodeKind = graph.NodeKind

// Output is graph.Output.
//
// Deprecated: use graph.Output (package control/graph).
type Output = graph.Output

// The node kinds, graph's.
//
// Deprecated: use the constants of package control/graph.
const (
	OpNode        = graph.OpNode
	Placeholder   = graph.Placeholder
	Const         = graph.Const
	Switch        = graph.Switch
	Merge         = graph.Merge
	Enter         = graph.Enter
	Exit          = graph.Exit
	NextIteration = graph.NextIteration
	Stack         = graph.Stack
	StackPush     = graph.StackPush
	StackPop      = graph.StackPop
)

// ErrDeadOutput is graph.ErrDeadOutput.
//
// Deprecated: use graph.ErrDeadOutput (package control/graph).
var ErrDeadOutput = graph.ErrDeadOutput

// Execute is graph.Execute.
//
// Deprecated: use graph.Execute (package control/graph).
func Execute(g *Graph, args ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	return graph.Execute(g, args...)
}
