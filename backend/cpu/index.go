package cpu

import (
	"github.com/eagerflow/eagerflow/internal/hostmem"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/tensor"
)

// Index inputs as kernels read them.

// elemCopier copies one element between raw buffers of one dtype.
func elemCopier(dt tensor.DType) func(dst []byte, di int, src []byte, si int) {
	size := dt.Size()
	switch size {
	case 2:
		return func(dst []byte, di int, src []byte, si int) { hostmem.View16(dst)[di] = hostmem.View16(src)[si] }
	case 4:
		return func(dst []byte, di int, src []byte, si int) { backend.View32(dst)[di] = backend.View32(src)[si] }
	case 8:
		return func(dst []byte, di int, src []byte, si int) { backend.View64(dst)[di] = backend.View64(src)[si] }
	}
	return func(dst []byte, di int, src []byte, si int) { dst[di] = src[si] }
}
