// Package report holds what the examples share: the choice of an output
// directory, and the end of a training run (its curves drawn by package
// plot, where the outputs went, the first and last epoch loss).
package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/plot"
)

// OutputDir returns dir when it is set, or a fresh temporary directory
// named for the example (removed by the returned cleanup).
func OutputDir(dir, name string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o755)
	}
	tmp, err := os.MkdirTemp("", name+"-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// Finish ends a training example: it draws h's curves (loss, and the
// validation metrics when there are any) to dir/curves.png, tells
// progress where the outputs are when the user chose dir (chosen), and
// returns the first and last epoch loss.
func Finish(dir string, chosen bool, progress io.Writer, title string, h nn.History) (first, last float64, err error) {
	if len(h.EpochLoss) == 0 {
		return 0, 0, nil
	}
	if err := plot.History(filepath.Join(dir, "curves.png"), h, plot.Options{Title: title}); err != nil {
		return 0, 0, err
	}
	if chosen && progress != nil {
		fmt.Fprintf(progress, "wrote %s (checkpoint, logs/, curves.png)\n", dir)
	}
	return h.EpochLoss[0], h.EpochLoss[len(h.EpochLoss)-1], nil
}
