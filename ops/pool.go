package ops

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// PoolOpts configure MaxPool2D and AvgPool2D: window and stride sizes
// (stride 0 means the window size), padding and layout.
type PoolOpts struct {
	Size     [2]int
	Strides  [2]int
	Padding  PaddingMode
	Explicit [2][2]int
	Format   DataFormat
}

// window returns the 4-d Window of a 2-d pool over an operand of shape
// s, its defaults filled.
func (o PoolOpts) window(s tensor.Shape) Window {
	kh, kw := o.Size[0], o.Size[1]
	sh, sw := o.Strides[0], o.Strides[1]
	if sh == 0 {
		sh = kh
	}
	if sw == 0 {
		sw = kw
	}
	h, w := hwOf(s, o.Format)
	var ph, pw [2]int
	switch o.Padding {
	case Same:
		ph, pw = SamePadding(h, kh, sh, 1), SamePadding(w, kw, sw, 1)
	case Explicit:
		ph, pw = o.Explicit[0], o.Explicit[1]
	}
	if o.Format == NCHW {
		return Window{Dims: []int{1, 1, kh, kw}, Strides: []int{1, 1, sh, sw}, Padding: [][2]int{{0, 0}, {0, 0}, ph, pw}}.withDefaults(4)
	}
	return Window{Dims: []int{1, kh, kw, 1}, Strides: []int{1, sh, sw, 1}, Padding: [][2]int{{0, 0}, ph, pw, {0, 0}}}.withDefaults(4)
}

func checkPool(op string, x *tensor.Tensor, o PoolOpts) {
	checkPoolOf(op, []*tensor.Tensor{x}, x.Shape(), o)
}

// checkPoolOf fails op (its inputs in) unless o pools an operand of
// shape s.
func checkPoolOf(op string, in []*tensor.Tensor, s tensor.Shape, o PoolOpts) {
	if s.Rank() != 4 {
		fail(op, tensor.ErrRank, in, "needs a rank-4 input, got %v", s)
	}
	if o.Size[0] < 1 || o.Size[1] < 1 {
		fail(op, tensor.ErrAttr, in, "window size %v must be positive", o.Size)
	}
	if o.Strides[0] < 0 || o.Strides[1] < 0 {
		fail(op, tensor.ErrAttr, in, "strides %v must be positive (0 means the window size)", o.Strides)
	}
	if o.Padding > Explicit || o.Format > NCHW {
		fail(op, tensor.ErrAttr, in, "unknown padding mode %d or data format %d", o.Padding, o.Format)
	}
}

// MaxPool2D takes the maximum of each window: x: [N, H, W, C] (NHWC) or
// [N, C, H, W] (NCHW) -> pooled. Padding never wins. Its gradient goes to
// the first maximum of each window: through SelectAndScatter, or, where
// a tape follows x on a device that prefers it (ArgmaxPooler), through
// MaxUnpool2D of the choices the forward pass kept
// (MaxPool2DWithArgmax).
func MaxPool2D(x *tensor.Tensor, o PoolOpts) *tensor.Tensor {
	needInputs("MaxPool2D", x)
	defer asOp("MaxPool2D")
	checkPool("MaxPool2D", x, o)
	w := o.window(x.Shape())
	if keepsArgmax(x, w) {
		return eager.Run(maxPoolArgmaxOp, w, x)[0]
	}
	return reduceWindow(x, scratch(ScalarLike(x, math.Inf(-1))), ReduceWindowAttrs{Kind: ReduceMax, Window: w, IdentityInit: true})
}

// AvgPool2D averages each window over its elements inside the input (with
// SAME padding, border windows average fewer elements, as TensorFlow does).
// Floats.
func AvgPool2D(x *tensor.Tensor, o PoolOpts) *tensor.Tensor {
	needInputs("AvgPool2D", x)
	defer asOp("AvgPool2D")
	checkPool("AvgPool2D", x, o)
	w := o.window(x.Shape())
	sum := ReduceWindow(x, scratch(ScalarLike(x, 0)), ReduceSum, w)
	if o.Padding == Valid {
		return Div(sum, scratch(ScalarLike(sum, float64(o.Size[0]*o.Size[1]))))
	}
	// Each window's count of elements inside: the window sums of ones over
	// one image plane, the same for every image and channel, counted as
	// NCHW ([1 1 H W]: its rows side by side, which a device reads whole)
	// and laid out as the sums are ([1 OH OW 1] in NHWC: the same memory).
	h, wd := hw(x, o.Format)
	plane := o
	plane.Format = NCHW
	ones, zero := tensor.FullOn(x.Device(), x.DType(), 1, 1, 1, h, wd), ScalarLike(x, 0)
	count := ReduceWindow(ones, zero, ReduceSum, plane.window(ones.Shape()))
	ones.Release() // nobody's input but the count's, which no tape records
	zero.Release()
	if o.Format == NHWC {
		planar := count
		count = Reshape(planar, 1, planar.Dim(2), planar.Dim(3), 1)
		if planar.Traced() == nil {
			planar.Release() // its buffer stays the view's
		}
	}
	return Div(sum, scratch(count))
}

// AsPooling2D describes w (its defaults filled) over an operand of shape
// as a 2-D pooling: rank 4, NHWC or NCHW (the batch and the channels left
// alone), no dilation, no negative padding; ok is false otherwise. The
// backends' pooling kernels take it.
func (w Window) AsPooling2D(shape tensor.Shape) (p Pooling2D, ok bool) {
	if len(shape) != 4 || len(w.Dims) != 4 {
		return p, false
	}
	for d := range 4 {
		if w.BaseDilation[d] != 1 || w.WindowDilation[d] != 1 || w.Padding[d][0] < 0 || w.Padding[d][1] < 0 {
			return p, false
		}
	}
	hd, wd, cd, nhwc, ok := poolAxes(func(d int) bool { return w.Dims[d] == 1 && w.Strides[d] == 1 && w.Padding[d] == [2]int{} })
	if !ok {
		return p, false
	}
	out := w.OutShape(shape)
	return Pooling2D{N: shape[0], C: shape[cd], H: shape[hd], W: shape[wd], OH: out[hd], OW: out[wd],
		KH: w.Dims[hd], KW: w.Dims[wd], SH: w.Strides[hd], SW: w.Strides[wd], PH: w.Padding[hd][0], PW: w.Padding[wd][0], NHWC: nhwc}, true
}

// poolAxes finds a 4-D pooling window's dimensions of height, width and
// channels: NHWC where the batch and the channels are plain (plain(d): the
// window leaves dimension d alone), else NCHW where the batch and
// dimension 1 are; ok is false for neither.
func poolAxes(plain func(d int) bool) (h, w, c int, nhwc, ok bool) {
	switch {
	case plain(0) && plain(3):
		return 1, 2, 3, true, true
	case plain(0) && plain(1):
		return 2, 3, 1, false, true
	}
	return 0, 0, 0, false, false
}

// Pooling2D is a 2-D pooling: N images of C channels, H x W, in OH x OW
// windows of KH x KW at strides SH and SW, padded by PH rows above and PW
// columns to the left; NHWC for channels last, else NCHW.
type Pooling2D struct {
	N, C, H, W, OH, OW     int
	KH, KW, SH, SW, PH, PW int
	NHWC                   bool
}

// SpreadOf reports whether a's window sums over dy (of shape dy) into out
// are the gradient of a 2-D pooling's window sums, as the gradient of
// ReduceWindow's Sum asks for them (a window of the pooling's size over dy
// dilated by its strides, a stride of 1, a low padding of the window less
// one less the pooling's, zero for init: IdentityInit), and returns that
// pooling, whose windows the backends walk instead (each element summing
// the windows over it).
func (a ReduceWindowAttrs) SpreadOf(dy, out tensor.Shape) (Pooling2D, bool) {
	w := a.Window
	if a.Kind != ReduceSum || !a.IdentityInit || len(dy) != 4 || len(out) != 4 || len(w.Dims) != 4 {
		return Pooling2D{}, false
	}
	hd, wd, cd, nhwc, ok := poolAxes(func(d int) bool {
		return w.Dims[d] == 1 && w.Strides[d] == 1 && w.BaseDilation[d] == 1 && w.WindowDilation[d] == 1 && w.Padding[d] == [2]int{}
	})
	if !ok {
		return Pooling2D{}, false
	}
	for _, d := range []int{hd, wd} {
		if lo := w.Padding[d][0]; w.Strides[d] != 1 || w.WindowDilation[d] != 1 || lo < 0 || lo >= w.Dims[d] {
			return Pooling2D{}, false
		}
	}
	return Pooling2D{N: out[0], C: out[cd], H: out[hd], W: out[wd], OH: dy[hd], OW: dy[wd],
		KH: w.Dims[hd], KW: w.Dims[wd], SH: w.BaseDilation[hd], SW: w.BaseDilation[wd],
		PH: w.Dims[hd] - 1 - w.Padding[hd][0], PW: w.Dims[wd] - 1 - w.Padding[wd][0], NHWC: nhwc}, true
}
