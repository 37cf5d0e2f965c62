package notebook

import (
	"testing"

	"github.com/eagerflow/eagerflow/internal/nilsweep"
	"github.com/eagerflow/eagerflow/plot"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every exported function, given nil arguments, says what was nil.
func TestNilArgumentsAreReported(t *testing.T) {
	inText(t)
	x := tensor.Zeros(tensor.Float32, 2, 2)
	fns := []nilsweep.Func{
		{Name: "Graph", Fn: Graph},
		{Name: "GraphSVG", Fn: GraphSVG},
		{Name: "Image", Fn: Image, Valid: []any{x, plot.ImageOptions{}}},
		{Name: "Heatmap", Fn: Heatmap, Valid: []any{x, plot.ImageOptions{}}},
		{Name: "NewLive", Fn: NewLive},
		{Name: "Model", Fn: Model},
		{Name: "ModelHTML", Fn: ModelHTML},
		{Name: "InNotebook", Fn: InNotebook},
		{Name: "Flush", Fn: Flush},
		{Name: "Show", Fn: Show},
		{Name: "TensorHTML", Fn: TensorHTML},
	}
	nilsweep.Covered(t, ".", fns, nil)
	nilsweep.Sweep(t, fns)
}
