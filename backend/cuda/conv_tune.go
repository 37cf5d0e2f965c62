package cuda

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// A convolution's filter gradient has two ways on the GPU: cuDNN's
// (cudnnConvolutionBackwardFilter with the fastest deterministic
// algorithm of its heuristics) and a patch matrix times the output's
// gradient (one GEMM). cuDNN's heuristics are not always right: on an
// H200 (2026-11-28) they chose float32 NHWC algorithms that took 724 and
// 415 µs a call in the Fashion-MNIST CNN's step, whose PyTorch twin's
// convolution gradients take 110 µs all told (PyTorch allows cuDNN's
// non-deterministic algorithms; eagerflow keeps to deterministic ones).
// So the first call of each shape outside a capture times both ways on
// the device with CUDA events (one wait), and every later call takes
// the GEMM where it was more than twice as fast, else cuDNN: the two
// ways round differently, and a margin that wide keeps a process's choice
// the same from run to run where their times are close.
// EAGERFLOW_CONV_TUNING=0 keeps every filter gradient on cuDNN (where it
// takes the convolution), with no timing.

// envConvTuning set to 0 turns the timing off (cuDNN's way always).
const envConvTuning = "EAGERFLOW_CONV_TUNING"

// filterWay is a convolution's chosen way to its filter gradient.
type filterWay uint8

const (
	filterUndecided filterWay = iota
	filterByDNN
	filterByGEMM
)

// filterWayOf returns the way decided for the filter gradient of the
// convolution cv (the forced way, where one is), or filterUndecided.
func (d *Device) filterWayOf(cv cu.Conv) filterWay {
	if w := filterWay(d.forceFilter.Load()); w != filterUndecided {
		return w
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.filterWays[cv]
}

// convFilterInto writes into out (HWIO) the filter gradient of the
// convolution a of x, whose output's gradient is dy: through cuDNN or
// a patch matrix and a GEMM, as the shape's first call decided
// (timeFilterWays), the GEMM alone where cuDNN is off or refuses it.
func convFilterInto(c *eager.Call, a ops.Conv2DGemmAttrs, x, dy, out, bias *tensor.Tensor) bool {
	if out.NumElements() == 0 {
		return false
	}
	d := gpu(c)
	cv, ok := d.dnnConvOf(a, x.DType(), x.Dim(0), a.Channels(x), a.Channels(dy))
	if _, on := d.dnn(); !ok || !on {
		return gemmFilterInto(c, a, x, dy, out, bias)
	}
	switch d.filterWayOf(cv) {
	case filterByDNN:
		if d.dnnBackwardFilter(c, a, x, dy, out) {
			return false
		}
	case filterByGEMM:
		return gemmFilterInto(c, a, x, dy, out, bias)
	default:
		if d.timeFilterWays(c, cv, a, x, dy, out) {
			return false
		}
		if d.dnnBackwardFilter(c, a, x, dy, out) {
			return false
		}
	}
	return gemmFilterInto(c, a, x, dy, out, bias)
}

// timeFilterWays computes the filter gradient into out both ways, timed
// by events, records the faster for cv and reports true; or reports
// false, having done nothing, where it cannot time them (a capture in
// progress, a driver without events, cuDNN refusing the convolution).
func (d *Device) timeFilterWays(c *eager.Call, cv cu.Conv, a ops.Conv2DGemmAttrs, x, dy, out *tensor.Tensor) bool {
	if d.Capturing() {
		return false
	}
	if _, err := d.timing(); err != nil {
		return false
	}
	start, err := d.Mark()
	if err != nil {
		return false
	}
	defer d.Forget(start)
	if !d.dnnBackwardFilter(c, a, x, dy, out) {
		d.decideFilter(cv, filterByGEMM)
		return false
	}
	mid, err := d.Mark()
	if err != nil {
		return true // computed by cuDNN; undecided, timed again next call
	}
	defer d.Forget(mid)
	mine := temporary(c, out.DType(), out.Shape(), "the filter gradient timed by a GEMM")
	defer mine.Release()
	gemmFilterInto(c, a, x, dy, mine, nil)
	end, err := d.Mark()
	if err != nil {
		return true
	}
	defer d.Forget(end)
	byDNN, err1 := d.Between(start, mid)
	byGEMM, err2 := d.Between(mid, end)
	if err1 != nil || err2 != nil {
		return true
	}
	way := filterByDNN
	if 2*byGEMM < byDNN {
		way = filterByGEMM
	}
	d.decideFilter(cv, way)
	return true
}

func (d *Device) decideFilter(cv cu.Conv, w filterWay) {
	d.mu.Lock()
	d.filterWays[cv] = w
	d.mu.Unlock()
}

// gemmFilterInto is the filter gradient as a patch matrix of x times dy:
// out[kh, kw, c, o] = Σ patches[n·rows, (kh, kw, c)]·dy[n·rows, o]; with
// a bias (nil: none), dy's sums over the batch and positions into it by
// the GEMM's epilogue where it runs one, reporting whether it did
// (productSummingB).
func gemmFilterInto(c *eager.Call, a ops.Conv2DGemmAttrs, x, dy, out, bias *tensor.Tensor) bool {
	n, ch, o := x.Dim(0), a.Channels(x), a.Channels(dy)
	rows, taps := convShapes(a, ch)
	p := patchMatrix(c, x, a, rows, taps)
	defer p.Release()
	d := gpu(c)
	if a.Format == ops.NHWC {
		return productSummingB(c, product{a: p, transA: true, b: dy, c: out, m: taps, k: n * rows, n: o, batch: 1}, bias)
	}
	dyp := move.Permuted(c, dy, []int{0, 2, 3, 1}) // [N, OH, OW, O]
	defer dyp.Release()
	dfp := temporary(c, out.DType(), tensor.Shape{ch, a.KH, a.KW, o}, "the permuted filter gradient")
	defer dfp.Release()
	summed := productSummingB(c, product{a: p, transA: true, b: dyp, c: dfp, m: taps, k: n * rows, n: o, batch: 1}, bias)
	// out[kh, kw, c, o] = dfp[c, kh, kw, o]
	st := tensor.Strides(dfp.Shape(), nil)
	check(c, d.Copy(out.Buffer(), 0, tensor.Strides(out.Shape(), nil), dfp.Buffer(), 0,
		[]int{st[1], st[2], st[0], st[3]}, out.Shape(), out.DType().Size()))
	return summed
}
