package csv_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/data/csv"
	"github.com/eagerflow/eagerflow/internal/nilsweep"
)

// Every exported function, given nil arguments, says what was nil.
func TestNilArgumentsAreReported(t *testing.T) {
	fns := []nilsweep.Func{
		{Name: "ReadFile", Fn: csv.ReadFile},
		{Name: "Read", Fn: csv.Read},
		{Name: "Dataset", Fn: csv.Dataset},
	}
	nilsweep.Covered(t, ".", fns, nil)
	nilsweep.Sweep(t, fns)
}
