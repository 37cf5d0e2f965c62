package gorgonia

import (
	"testing"

	"github.com/eagerflow/eagerflow/internal/nilsweep"
)

// Every exported function, given nil arguments, says what was nil.
func TestNilArgumentsAreReported(t *testing.T) {
	fns := []nilsweep.Func{{Name: "ToDense", Fn: ToDense}, {Name: "FromDense", Fn: FromDense}}
	nilsweep.Covered(t, ".", fns, nil)
	nilsweep.Sweep(t, fns)
}
