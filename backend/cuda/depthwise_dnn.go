package cuda

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Depthwise convolutions through cuDNN, as PyTorch runs its grouped ones:
// a convolution of C groups (cu.Conv.Groups), K = C·M filters of one
// channel each, wherever cuDNN takes the convolution (padding the same on
// both sides of each dimension), the pass's algorithm chosen once per
// shape as Conv2D's are. Filter k = c·M + m is the HWCM filter's (c, m):
// the filter in cuDNN's layout is its [C M KH KW] permutation, KCRS and
// KRSC alike with one channel a filter. Elsewhere, and with cuDNN off
// (SetCuDNN), the generated kernels run.

// hwcmToDNN permutes the depthwise filter [KH KW C M] to [C M KH KW].
var hwcmToDNN = []int{2, 3, 0, 1}

// dnnDepthwise computes pass of the depthwise convolution with attributes
// a over n images of ch channels at multiplier m through cuDNN: the
// output from x (in0) and the filter (in1), the input gradient from the
// filter (in0) and the output gradient (in1), or the HWCM filter
// gradient from x (in0) and the output gradient (in1), into out. It
// reports false, having done nothing, where cuDNN is off or does not take
// the convolution.
func (d *Device) dnnDepthwise(c *eager.Call, pass cu.ConvPass, a ops.Conv2DGemmAttrs, n, ch, m int, in0, in1, out *tensor.Tensor) bool {
	dnn, ok := d.dnn()
	if !ok {
		return false
	}
	cv, ok := d.dnnConvOf(a, out.DType(), n, ch, ch*m)
	if cv.Groups = ch; !ok || cv.Check() != nil {
		return false
	}
	plan, err := d.convPlan(dnn, cv, pass)
	if err != nil {
		return false
	}
	switch pass {
	case cu.ConvForward:
		fk := move.Permuted(c, in1, hwcmToDNN)
		defer fk.Release()
		d.dnnRun(c, dnn, cv, pass, plan, ptr(in0), ptr(fk), ptr(out))
	case cu.ConvBackwardData:
		fk := move.Permuted(c, in0, hwcmToDNN)
		defer fk.Release()
		d.dnnRun(c, dnn, cv, pass, plan, ptr(fk), ptr(in1), ptr(out))
	default:
		dk := temporary(c, out.DType(), tensor.Shape{ch, m, a.KH, a.KW}, "the depthwise filter gradient in cuDNN's layout")
		defer dk.Release()
		d.dnnRun(c, dnn, cv, pass, plan, ptr(in0), ptr(in1), ptr(dk))
		d.unpermute(c, dk, hwcmToDNN, out)
	}
	return true
}
