package opattr_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/internal/nilsweep"
	"github.com/eagerflow/eagerflow/tensor"
)

// The package's one function, given nil shapes, says so or works.
func TestNilArgumentsAreReported(t *testing.T) {
	fns := []nilsweep.Func{{Name: "MatrixDims", Fn: opattr.MatrixDims, Valid: []any{tensor.Shape{2, 3}, false}}}
	nilsweep.Covered(t, ".", fns, nil)
	nilsweep.Sweep(t, fns)
}
