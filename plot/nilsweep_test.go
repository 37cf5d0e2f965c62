package plot

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/eagerflow/eagerflow/internal/nilsweep"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every exported function, given nil arguments, says what was nil.
func TestNilArgumentsAreReported(t *testing.T) {
	dir := t.TempDir()
	s := Series{Name: "loss", X: []float64{1, 2}, Y: []float64{3, 2}}
	h := nn.History{EpochLoss: []float64{1, 0.5}, StepLoss: []float64{1, 0.5}, EpochSteps: []int{1, 2}, Steps: 2}
	img := tensor.Zeros(tensor.Float32, 4, 4)
	fns := []nilsweep.Func{
		{Name: "Lines", Fn: Lines, Valid: []any{filepath.Join(dir, "l.png"), Options{}, []Series{s}}},
		{Name: "WriteLines", Fn: WriteLines, Valid: []any{io.Writer(&bytes.Buffer{}), "png", Options{}, []Series{s}}},
		{Name: "History", Fn: History, Valid: []any{filepath.Join(dir, "h.png"), h, Options{}}},
		{Name: "WriteHistory", Fn: WriteHistory, Valid: []any{io.Writer(&bytes.Buffer{}), "svg", h, Options{}}},
		{Name: "Viridis", Fn: Viridis},
		{Name: "Image", Fn: Image, Valid: []any{filepath.Join(dir, "i.png"), img, ImageOptions{}}},
		{Name: "ToImage", Fn: ToImage, Valid: []any{img, ImageOptions{}}},
	}
	nilsweep.Covered(t, ".", fns, nil)
	nilsweep.Sweep(t, fns)
}
