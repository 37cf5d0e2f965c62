package conformance_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/conformance"
)

// A backend's tests run the whole table on its devices once they are
// registered (backend/cuda's conformance_test.go does): every registered
// op's samples, checked against cpu:0, traced, and through first and
// second derivatives. What a backend does not run yet is passed as
// Pending; the table fails when such a kernel appears, so the list stays
// true.
func ExampleRun() {
	testConformance := func(t *testing.T) {
		conformance.Run(t)
	}
	_ = testConformance // in a _test.go file: func TestConformance(t *testing.T) { conformance.Run(t) }
}
