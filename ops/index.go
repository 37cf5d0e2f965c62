package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// checkIndexTensor fails the call unless input i holds integer indices.
func checkIndexTensor(c *eager.Call, i int) {
	if dt := c.Inputs[i].DType(); dt != tensor.Int32 && dt != tensor.Int64 {
		c.Fail(tensor.ErrDType, "indices (input %d) must be int32 or int64, got %v", i, dt)
	}
}
