package npy

import (
	"testing"

	"github.com/eagerflow/eagerflow/internal/nilsweep"
)

// Every exported function, given nil arguments, says what was nil.
func TestNilArgumentsAreReported(t *testing.T) {
	fns := []nilsweep.Func{
		{Name: "ReadArchiveFile", Fn: ReadArchiveFile},
		{Name: "ReadArchive", Fn: ReadArchive},
		{Name: "ArchiveDataset", Fn: ArchiveDataset},
		{Name: "ReadFile", Fn: ReadFile},
		{Name: "Dataset", Fn: Dataset},
		{Name: "Read", Fn: Read},
	}
	nilsweep.Covered(t, ".", fns, nil)
	nilsweep.Sweep(t, fns)
}
