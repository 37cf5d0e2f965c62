package difftest

import (
	"testing"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// nn's Conv1D, Conv2DTranspose and DepthwiseConv2D equal PyTorch's
// F.conv1d, F.conv_transpose2d and F.conv2d with groups (nn_torch.py's
// conv, given the same weights in PyTorch's layouts and the padding
// here written out), in the output and in the gradients of the input,
// the filter and the bias: float64, over both layouts, strides,
// dilations, Valid, Same, causal and explicit padding, an output padding
// and kernels of even size.
func TestConvLayersAgainstTorch(t *testing.T) {
	needTorch(t)
	var runs []layerRun
	var cases []layerCase
	add := func(kind string, settings []float64, m nn.Module, x *tensor.Tensor) {
		rng := tensor.NewRNG(uint64(70 + len(cases)))
		jiggle(m, rng)
		y := m.Forward(x)
		w := tensor.RandUniform(rng, tensor.Float64, -1, 1, y.Shape()...)
		r, lc := runLayer(len(cases), kind, settings, m, "c/", x, w)
		runs, cases = append(runs, r), append(cases, lc)
	}
	r := tensor.NewRNG(69)
	f64 := tensor.Float64
	for _, c := range []struct {
		k, stride, dilation int
		pad                 ops.PaddingMode
		explicit            [2]int
		causal, nchw        bool
	}{
		{3, 1, 1, ops.Valid, [2]int{}, false, false},
		{3, 2, 1, ops.Same, [2]int{}, false, false},
		{2, 1, 2, ops.Valid, [2]int{}, true, false},
		{3, 2, 1, ops.Explicit, [2]int{1, 2}, false, true},
		{4, 3, 1, ops.Same, [2]int{}, false, true},
	} {
		const n, l, in, out = 2, 9, 3, 4
		o := nn.Conv1DOpts{Stride: c.stride, Dilation: c.dilation, Padding: c.pad, Explicit: c.explicit, Causal: c.causal, DType: f64}
		x := tensor.RandNormal(r, f64, n, l, in)
		if c.nchw {
			o.Format, x = ops.NCHW, tensor.RandNormal(r, f64, n, in, l)
		}
		var pad [2]int
		switch {
		case c.causal:
			pad = [2]int{(c.k - 1) * c.dilation, 0}
		case c.pad == ops.Same:
			pad = ops.SamePadding(l, c.k, c.stride, c.dilation)
		case c.pad == ops.Explicit:
			pad = c.explicit
		}
		add("conv1d", []float64{float64(c.stride), float64(c.dilation), float64(pad[0]), float64(pad[1]), boolf(c.nchw)},
			nn.NewConv1D("c", r, c.k, in, out, o), x)
	}
	for _, c := range []struct {
		kh, kw             int
		strides, dilations [2]int
		pad                ops.PaddingMode
		outPad             [2]int
		nchw               bool
	}{
		{3, 3, [2]int{2, 2}, [2]int{1, 1}, ops.Valid, [2]int{}, false},
		{3, 3, [2]int{2, 2}, [2]int{1, 1}, ops.Same, [2]int{}, false},
		{2, 3, [2]int{2, 1}, [2]int{1, 2}, ops.Valid, [2]int{1, 0}, true},
		{4, 4, [2]int{2, 2}, [2]int{1, 1}, ops.Same, [2]int{}, false},
		{3, 2, [2]int{3, 2}, [2]int{1, 1}, ops.Valid, [2]int{2, 1}, false},
		{1, 1, [2]int{3, 3}, [2]int{1, 1}, ops.Same, [2]int{}, true}, // the stride beyond the kernel: zero rows between
	} {
		const n, h, w, in, out = 2, 3, 4, 3, 2
		o := nn.Conv2DTransposeOpts{Conv2DOpts: nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Strides: c.strides, Dilations: c.dilations, Padding: c.pad}, DType: f64}, OutputPadding: c.outPad}
		x := tensor.RandNormal(r, f64, n, h, w, in)
		if c.nchw {
			o.Format, x = ops.NCHW, tensor.RandNormal(r, f64, n, in, h, w)
		}
		m := nn.NewConv2DTranspose("c", r, c.kh, c.kw, in, out, o)
		y := m.Forward(x)
		oh, ow := y.Dim(1), y.Dim(2)
		if c.nchw {
			oh, ow = y.Dim(2), y.Dim(3)
		}
		var lowH, lowW int
		if c.pad == ops.Same {
			lowH, lowW = ops.SamePadding(oh, c.kh, c.strides[0], c.dilations[0])[0], ops.SamePadding(ow, c.kw, c.strides[1], c.dilations[1])[0]
		}
		add("conv2d_transpose", []float64{float64(c.strides[0]), float64(c.strides[1]), float64(c.dilations[0]), float64(c.dilations[1]),
			float64(lowH), float64(lowW), float64(oh), float64(ow), boolf(c.nchw)}, m, x)
	}
	for _, c := range []struct {
		k, mult, stride, dilation int
		pad                       ops.PaddingMode
		nchw                      bool
	}{
		{3, 2, 2, 1, ops.Same, false},
		{3, 1, 1, 2, ops.Valid, true},
		{2, 3, 1, 1, ops.Same, false},
	} {
		const n, h, w, ch = 2, 6, 5, 3
		o := nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Strides: [2]int{c.stride, c.stride}, Dilations: [2]int{c.dilation, c.dilation}, Padding: c.pad}, DType: f64}
		x := tensor.RandNormal(r, f64, n, h, w, ch)
		if c.nchw {
			o.Format, x = ops.NCHW, tensor.RandNormal(r, f64, n, ch, h, w)
		}
		var ph, pw [2]int
		if c.pad == ops.Same {
			ph, pw = ops.SamePadding(h, c.k, c.stride, c.dilation), ops.SamePadding(w, c.k, c.stride, c.dilation)
		}
		add("depthwise", []float64{float64(c.stride), float64(c.dilation), float64(ph[0]), float64(ph[1]), float64(pw[0]), float64(pw[1]), boolf(c.nchw), float64(c.mult)},
			nn.NewDepthwiseConv2D("c", r, c.k, c.k, ch, c.mult, o), x)
	}
	checkLayers(t, runs, cases)
}
