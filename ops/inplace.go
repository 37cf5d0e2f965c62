package ops

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// AxpyInPlace sets dst[i] += alpha*x[i] for every element of dst (x must
// be at least as long), split across the host's workers, with an AVX2+FMA
// kernel for float32. It is not a tensor op (tensors are immutable): it is
// the kernel under in-place updates of buffers their caller owns, such as
// tape.Variable.AssignScaled.
func AxpyInPlace[T tensor.Float](dst []T, alpha T, x []T) {
	x = x[:len(dst)]
	device.Host().Parallel(len(dst), 0.25, func(lo, hi int) {
		d, s := dst[lo:hi], x[lo:hi]
		if d32, ok := any(d).([]float32); ok && haveVecKernels && len(d) > 0 {
			saxpy(&d32[0], &any(s).([]float32)[0], any(alpha).(float32), len(d))
			return
		}
		for i := range d {
			d[i] += alpha * s[i]
		}
	})
}
