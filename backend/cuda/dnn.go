package cuda

import (
	"os"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Convolutions through cuDNN (libcudnn.so.9, loaded with the driver; on
// the emulator its emulation): Conv2D, its two gradients and the fused
// forms run there where cuDNN takes the convolution (the same padding on
// both sides of each dimension), each pass with the algorithm cuDNN's
// heuristics rank first among the deterministic ones that are neither
// FFT nor Winograd, chosen once per shape. cuDNN wants the filters KCRS
// beside NCHW and KRSC beside NHWC, so the HWIO filter goes through a
// permuted copy (and the filter gradient back). Elsewhere, and with
// cuDNN turned off, the patch matrix and cuBLAS compute them.

// EnvCuDNN set to 0 starts devices with cuDNN's convolutions off.
const EnvCuDNN = "EAGERFLOW_CUDNN"

// SetCuDNN turns cuDNN's convolutions on or off for d (on where the
// driver has cuDNN, unless EAGERFLOW_CUDNN=0).
func (d *Device) SetCuDNN(on bool) { d.dnnOff.Store(!on) }

// CuDNN reports whether d's convolutions go through cuDNN.
func (d *Device) CuDNN() bool {
	_, ok := d.dnn()
	return ok
}

// dnn returns cuDNN where d uses it.
func (d *Device) dnn() (cu.DNN, bool) {
	n, ok := d.ctx.(cu.DNN)
	if !ok || d.dnnOff.Load() || n.DNNVersion() == "" {
		return nil, false
	}
	return n, true
}

func dnnOffByEnv() bool { return os.Getenv(EnvCuDNN) == "0" }

// planKey is a pass of a convolution.
type planKey struct {
	conv cu.Conv
	pass cu.ConvPass
}

// convPlan returns the pass's plan, chosen on first use.
func (d *Device) convPlan(n cu.DNN, cv cu.Conv, pass cu.ConvPass) (cu.ConvPlan, error) {
	key := planKey{cv, pass}
	d.mu.Lock()
	p, ok := d.plans[key]
	d.mu.Unlock()
	if ok {
		return p, nil
	}
	err := d.ctx.Do(func() (err error) { p, err = n.PlanConv(cv, pass); return })
	if err != nil {
		return p, err
	}
	d.mu.Lock()
	d.plans[key] = p
	d.mu.Unlock()
	return p, nil
}

// dnnConvOf is the cuDNN description of a convolution with attributes a
// of n images of ch channels into k, or false where cuDNN does not take
// it.
func (d *Device) dnnConvOf(a ops.Conv2DGemmAttrs, dt tensor.DType, n, ch, k int) (cu.Conv, bool) {
	if a.PadTop != a.PadBottom || a.PadLeft != a.PadRight || (dt != tensor.Float32 && dt != tensor.Float64 && !dt.IsHalf()) {
		return cu.Conv{}, false
	}
	cv := cu.Conv{Type: cu.Float32, NHWC: a.Format == ops.NHWC, N: n, C: ch, H: a.H, W: a.W, K: k, R: a.KH, S: a.KW,
		PadH: a.PadTop, PadW: a.PadLeft, StrideH: a.StrideH, StrideW: a.StrideW, DilationH: a.DilationH, DilationW: a.DilationW,
		TF32: dt == tensor.Float32 && d.tf32.Load()}
	switch dt {
	case tensor.Float64:
		cv.Type = cu.Float64
	case tensor.BFloat16:
		cv.Type = cu.BFloat16
	case tensor.Float16:
		cv.Type = cu.Float16
	}
	p, q := cv.OutSize()
	if oh, ow := a.OutSize(); cv.Check() != nil || p != oh || q != ow {
		return cu.Conv{}, false
	}
	return cv, true
}

// The permutations of the HWIO filter into cuDNN's layouts.
var (
	hwioToKRSC = []int{3, 0, 1, 2}
	hwioToKCRS = []int{3, 2, 0, 1}
)

// dnnFilter is the HWIO filter f in cuDNN's layout for cv, a temporary.
func dnnFilter(c *eager.Call, cv cu.Conv, f *tensor.Tensor) *tensor.Tensor {
	if cv.NHWC {
		return move.Permuted(c, f, hwioToKRSC)
	}
	return move.Permuted(c, f, hwioToKCRS)
}

// dnnRun runs the pass with its plan and a workspace.
func (d *Device) dnnRun(c *eager.Call, n cu.DNN, cv cu.Conv, pass cu.ConvPass, plan cu.ConvPlan, a, b, out cu.Ptr) {
	var ws cu.Ptr
	if plan.Workspace > 0 {
		w := temporary(c, tensor.Uint8, tensor.Shape{plan.Workspace}, "cuDNN's workspace")
		defer w.Release()
		ws = ptr(w)
	}
	check(c, d.ctx.Do(func() error { return n.Conv(d.s, cv, pass, plan, a, b, out, ws) }))
}

// dnnForward computes out = x ⋆ f through cuDNN, reporting false (having
// done nothing) where it does not apply.
func (d *Device) dnnForward(c *eager.Call, a ops.Conv2DGemmAttrs, x, f, out *tensor.Tensor) bool {
	n, ok := d.dnn()
	if !ok {
		return false
	}
	cv, ok := d.dnnConvOf(a, x.DType(), x.Dim(0), f.Dim(2), f.Dim(3))
	if !ok {
		return false
	}
	plan, err := d.convPlan(n, cv, cu.ConvForward)
	if err != nil {
		return false
	}
	fk := dnnFilter(c, cv, f)
	defer fk.Release()
	d.dnnRun(c, n, cv, cu.ConvForward, plan, ptr(x), ptr(fk), ptr(out))
	return true
}

// dnnBackwardData computes the input gradient out from the filter f and
// the output gradient dy through cuDNN, or reports false.
func (d *Device) dnnBackwardData(c *eager.Call, a ops.Conv2DGemmAttrs, f, dy, out *tensor.Tensor) bool {
	n, ok := d.dnn()
	if !ok {
		return false
	}
	cv, ok := d.dnnConvOf(a, dy.DType(), dy.Dim(0), f.Dim(2), f.Dim(3))
	if !ok {
		return false
	}
	plan, err := d.convPlan(n, cv, cu.ConvBackwardData)
	if err != nil {
		return false
	}
	fk := dnnFilter(c, cv, f)
	defer fk.Release()
	d.dnnRun(c, n, cv, cu.ConvBackwardData, plan, ptr(fk), ptr(dy), ptr(out))
	return true
}

// dnnBackwardFilter computes the HWIO filter gradient out from the input
// x and the output gradient dy through cuDNN, or reports false.
func (d *Device) dnnBackwardFilter(c *eager.Call, a ops.Conv2DGemmAttrs, x, dy, out *tensor.Tensor) bool {
	n, ok := d.dnn()
	if !ok {
		return false
	}
	cv, ok := d.dnnConvOf(a, x.DType(), x.Dim(0), a.Channels(x), a.Channels(dy))
	if !ok {
		return false
	}
	plan, err := d.convPlan(n, cv, cu.ConvBackwardFilter)
	if err != nil {
		return false
	}
	perm := hwioToKCRS
	if cv.NHWC {
		perm = hwioToKRSC
	}
	shape := make(tensor.Shape, 4)
	for i, p := range perm {
		shape[i] = out.Dim(p)
	}
	dk := temporary(c, out.DType(), shape, "the filter gradient in cuDNN's layout")
	defer dk.Release()
	d.dnnRun(c, n, cv, cu.ConvBackwardFilter, plan, ptr(x), ptr(dy), ptr(dk))
	d.unpermute(c, dk, perm, out)
	return true
}

// unpermute writes into out the filter dk, which holds out permuted by
// perm (dk's dimension i is out's perm[i]).
func (d *Device) unpermute(c *eager.Call, dk *tensor.Tensor, perm []int, out *tensor.Tensor) {
	// out[i0, i1, i2, i3] = dk[i_perm[0], ...]: dk's stride for each of
	// out's dimensions.
	st := tensor.Strides(dk.Shape(), nil)
	src := make([]int, len(perm))
	for i, p := range perm {
		src[p] = st[i]
	}
	check(c, d.Copy(out.Buffer(), 0, tensor.Strides(out.Shape(), nil), dk.Buffer(), 0, src, out.Shape(), out.DType().Size()))
}
