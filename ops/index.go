package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// indexValues returns an Int32 or Int64 tensor's values as int64s.
func indexValues(t *tensor.Tensor) []int64 {
	if t.DType() == tensor.Int32 {
		v := tensor.ToSlice[int32](t)
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = int64(x)
		}
		return out
	}
	return tensor.ToSlice[int64](t)
}

// checkIndexTensor fails the call unless input i holds integer indices.
func checkIndexTensor(c *eager.Call, i int) {
	if dt := c.Inputs[i].DType(); dt != tensor.Int32 && dt != tensor.Int64 {
		c.Fail(tensor.ErrDType, "indices (input %d) must be int32 or int64, got %v", i, dt)
	}
}

// checkIndexRange returns the indices of input i, failing the call if one
// is outside [0, n). Kernels call it before they write anything.
func checkIndexRange(c *eager.Call, i int, n int) []int64 {
	idx := indexValues(c.Inputs[i])
	for k, v := range idx {
		if v < 0 || v >= int64(n) {
			c.Fail(tensor.ErrIndex, "index %d at position %d is outside [0, %d)", v, k, n)
		}
	}
	return idx
}

// elemCopier copies one element between raw buffers of one dtype.
func elemCopier(dt tensor.DType) func(dst []byte, di int, src []byte, si int) {
	size := dt.Size()
	switch size {
	case 4:
		return func(dst []byte, di int, src []byte, si int) { tensor.View32(dst)[di] = tensor.View32(src)[si] }
	case 8:
		return func(dst []byte, di int, src []byte, si int) { tensor.View64(dst)[di] = tensor.View64(src)[si] }
	}
	return func(dst []byte, di int, src []byte, si int) { dst[di] = src[si] }
}
