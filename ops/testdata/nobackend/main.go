// Command nobackend is a program of tensor and ops alone, which links no
// backend: TestAProgramWithoutABackendIsToldWhichToImport runs it.
package main

import (
	"fmt"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

func main() {
	x := tensor.FromSlice([]float32{1, 2}, 2)
	fmt.Println(tensor.Catch(func() { ops.Add(x, x) }))
}
