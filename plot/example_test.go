package plot_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/plot"
	"github.com/eagerflow/eagerflow/tensor"
)

// Training curves from a Fit history, and a batch of images as a grid.
func Example() {
	dir, _ := os.MkdirTemp("", "plot-example")
	defer os.RemoveAll(dir)

	// What nn.Fit returns; here two epochs of three steps written by hand.
	h := nn.History{
		StepLoss:   []float64{2.3, 1.9, 1.4, 1.1, 0.9, 0.8},
		EpochSteps: []int{3, 6},
		EpochLoss:  []float64{1.87, 0.93},
		Epochs: []nn.Logs{
			{"loss": 1.87, "val_loss": 1.5, "val_accuracy": 0.61},
			{"loss": 0.93, "val_loss": 0.95, "val_accuracy": 0.74},
		},
	}
	if err := plot.History(filepath.Join(dir, "curves.png"), h, plot.Options{Title: "run 1", LogY: true}); err != nil {
		fmt.Println(err)
	}

	// 16 random 8x8 RGB images, channels last, in a 4x4 grid, 4x enlarged.
	batch := tensor.RandUniform(tensor.NewRNG(1), tensor.Float32, 0, 1, 16, 8, 8, 3)
	img, err := plot.ToImage(batch, plot.ImageOptions{Cols: 4, Scale: 4, Min: 0, Max: 1})
	if err != nil {
		fmt.Println(err)
	}
	fmt.Println(img.Bounds().Dx(), "x", img.Bounds().Dy(), "pixels")
	err = plot.Image(filepath.Join(dir, "batch.png"), batch, plot.ImageOptions{Cols: 4, Scale: 4})
	fmt.Println(err)

	// A mistake is an error naming the file and what was wrong.
	fmt.Println(plot.Image(filepath.Join(dir, "bad.png"), tensor.Zeros(tensor.Float32, 5, 4, 2), plot.ImageOptions{}) != nil)
	// Output:
	// 140 x 140 pixels
	// <nil>
	// true
}
