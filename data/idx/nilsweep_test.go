package idx

import (
	"testing"

	"github.com/eagerflow/eagerflow/internal/nilsweep"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every exported function, given nil arguments, says what was nil.
func TestNilArgumentsAreReported(t *testing.T) {
	images, labels := tensor.Zeros(tensor.Uint8, 2, 3, 3), tensor.Zeros(tensor.Uint8, 2)
	fns := []nilsweep.Func{
		{Name: "ReadFile", Fn: ReadFile},
		{Name: "Read", Fn: Read},
		{Name: "Dataset", Fn: Dataset, Valid: []any{[]*tensor.Tensor{images, labels}}},
		{Name: "Dataset one", Fn: Dataset},
	}
	nilsweep.Covered(t, ".", fns, nil)
	nilsweep.Sweep(t, fns)
	if _, err := Dataset(images, nil); err == nil || err.Error() != "idx: Dataset: array 1 is nil" {
		t.Errorf("Dataset(images, nil): %v", err)
	}
}
