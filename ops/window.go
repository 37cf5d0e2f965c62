package ops

import (
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Window is XLA's window of ReduceWindow, SelectAndScatter and Conv: one
// entry per dimension of the operand. Nil Strides, dilations and Padding
// mean 1, 1 and no padding.
type Window struct {
	Dims           []int    // window size per dimension (>= 1)
	Strides        []int    // step between windows (>= 1)
	Padding        [][2]int // (low, high) per dimension; negative removes
	BaseDilation   []int    // holes between operand elements (lhs dilation)
	WindowDilation []int    // holes between window taps (rhs dilation)
}

func (w Window) String() string {
	return fmt.Sprintf("window=%v strides=%v padding=%v base_dilation=%v window_dilation=%v",
		w.Dims, w.Strides, w.Padding, w.BaseDilation, w.WindowDilation)
}

func ones(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

// withDefaults fills nil fields for rank r: strides and dilations of 1, no
// padding.
func (w Window) withDefaults(r int) Window {
	if w.Strides == nil {
		w.Strides = ones(r)
	}
	if w.BaseDilation == nil {
		w.BaseDilation = ones(r)
	}
	if w.WindowDilation == nil {
		w.WindowDilation = ones(r)
	}
	if w.Padding == nil {
		w.Padding = make([][2]int, r)
	}
	return w
}

// normalized fills defaults and checks w against an operand shape.
func (w Window) normalized(c *eager.Call, shape tensor.Shape) Window {
	r := shape.Rank()
	if len(w.Dims) != r {
		c.Fail(tensor.ErrRank, "%d window dimensions for rank %d", len(w.Dims), r)
	}
	w = w.withDefaults(r)
	if len(w.Strides) != r || len(w.BaseDilation) != r || len(w.WindowDilation) != r || len(w.Padding) != r {
		c.Fail(tensor.ErrRank, "strides, dilations and padding need %d entries each", r)
	}
	for d := 0; d < r; d++ {
		if w.Dims[d] < 1 || w.Strides[d] < 1 || w.BaseDilation[d] < 1 || w.WindowDilation[d] < 1 {
			c.Fail(tensor.ErrAttr, "dimension %d: window size, stride and dilations must be at least 1", d)
		}
	}
	return w
}

// geometry is a window laid over one operand shape.
type geometry struct {
	in, out, win tensor.Shape
	src          [][]int // per dimension: operand index of (o, k) at o*win+k, or -1 for padding
	inside       [][]bool
	woff         []int // operand offsets of the window taps, relative to the window's first tap
	first        [][]int
	xs           []int // operand strides
}

// outSize is the number of window positions along one dimension.
func outSize(n int, w Window, d int) int {
	padded := max(0, (n-1)*w.BaseDilation[d]+1) + w.Padding[d][0] + w.Padding[d][1]
	if n == 0 {
		padded = w.Padding[d][0] + w.Padding[d][1]
	}
	span := (w.Dims[d]-1)*w.WindowDilation[d] + 1
	if padded < span {
		return 0
	}
	return (padded-span)/w.Strides[d] + 1
}

func newGeometry(in tensor.Shape, w Window) *geometry {
	r := in.Rank()
	g := &geometry{in: in, out: make(tensor.Shape, r), win: slices.Clone(tensor.Shape(w.Dims)),
		src: make([][]int, r), inside: make([][]bool, r), first: make([][]int, r), xs: tensor.Strides(in, nil)}
	for d := 0; d < r; d++ {
		n, o, k := in[d], outSize(in[d], w, d), w.Dims[d]
		g.out[d] = o
		g.src[d] = make([]int, o*k)
		g.inside[d] = make([]bool, o)
		g.first[d] = make([]int, o)
		for oi := 0; oi < o; oi++ {
			all := true
			for ki := 0; ki < k; ki++ {
				p := oi*w.Strides[d] + ki*w.WindowDilation[d] - w.Padding[d][0]
				idx := -1
				if p >= 0 && p%w.BaseDilation[d] == 0 && p/w.BaseDilation[d] < n {
					idx = p / w.BaseDilation[d]
				}
				g.src[d][oi*k+ki] = idx
				all = all && idx >= 0
			}
			g.inside[d][oi] = all && w.BaseDilation[d] == 1
			g.first[d][oi] = g.src[d][oi*k]
		}
	}
	// Relative offsets of the taps of a window that lies inside.
	g.woff = make([]int, 0, g.win.NumElements())
	g.eachTap(func(k []int) {
		off := 0
		for d, kd := range k {
			off += kd * w.WindowDilation[d] * g.xs[d]
		}
		g.woff = append(g.woff, off)
	})
	return g
}

// eachTap calls fn with every window index, row-major.
func (g *geometry) eachTap(fn func(k []int)) { odometer(g.win, fn) }

// odometer calls fn with every index of shape, row-major.
func odometer(shape tensor.Shape, fn func(idx []int)) {
	if shape.NumElements() == 0 {
		return
	}
	idx := make([]int, len(shape))
	for {
		fn(idx)
		d := len(shape) - 1
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

// windows calls fn for each window position (row-major over g.out) with
// its flat index and either the operand offset of its first tap (when the
// whole window lies inside the operand, so taps are at base+woff[j]) or -1.
func (g *geometry) windows(fn func(o int, o_ []int, base int)) {
	i := 0
	odometer(g.out, func(o []int) {
		base := 0
		for d, od := range o {
			if !g.inside[d][od] {
				base = -1
				break
			}
			base += g.first[d][od] * g.xs[d]
		}
		fn(i, o, base)
		i++
	})
}

// tapOffset returns the operand offset of tap k of window o, or -1 when it
// falls on padding.
func (g *geometry) tapOffset(o, k []int) int {
	off := 0
	for d := range o {
		idx := g.src[d][o[d]*g.win[d]+k[d]]
		if idx < 0 {
			return -1
		}
		off += idx * g.xs[d]
	}
	return off
}

// patchesKernel gathers window taps: out[o, k] = x[tap] or the pad value.
func patchesKernel[T uint8 | uint32 | uint64](g *geometry, x, out []T, pad T) {
	nw := len(g.woff)
	g.windows(func(i int, o []int, base int) {
		dst := out[i*nw : (i+1)*nw]
		if base >= 0 {
			for j, off := range g.woff {
				dst[j] = x[base+off]
			}
			return
		}
		j := 0
		g.eachTap(func(k []int) {
			if off := g.tapOffset(o, k); off >= 0 {
				dst[j] = x[off]
			} else {
				dst[j] = pad
			}
			j++
		})
	})
}

// scatterPatchesKernel is the adjoint: x[tap] += dy[o, k].
func scatterPatchesKernel[T tensor.Num](g *geometry, dy, out []T) {
	clear(out)
	nw := len(g.woff)
	g.windows(func(i int, o []int, base int) {
		src := dy[i*nw : (i+1)*nw]
		if base >= 0 {
			for j, off := range g.woff {
				out[base+off] += src[j]
			}
			return
		}
		j := 0
		g.eachTap(func(k []int) {
			if off := g.tapOffset(o, k); off >= 0 {
				out[off] += src[j]
			}
			j++
		})
	})
}

// PatchesAttrs are ExtractPatches' window and, for its adjoint, the
// operand's shape.
type PatchesAttrs struct {
	Window
	Operand tensor.Shape
}

func patchesShape(g *geometry) tensor.Shape { return append(slices.Clone(g.out), g.win...) }

var extractPatchesOp, scatterPatchesOp *eager.Op

func init() {
	extractPatchesOp = eager.Register(anyDType(&eager.Op{
		Name: "ExtractPatches", Inputs: 2, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, pad := c.Inputs[0], c.Inputs[1]
			if pad.Rank() != 0 {
				c.Fail(tensor.ErrRank, "the padding value must be a scalar")
			}
			a := c.Attrs.(PatchesAttrs)
			a.Window = a.Window.normalized(c, x.Shape())
			a.Operand = x.Shape()
			c.Attrs = a
			return c.Out1(x.DType(), patchesShape(newGeometry(x.Shape(), a.Window)))
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			dy := g.OutGrads[0]
			dx := eager.Run1(scatterPatchesOp, g.Attrs, dy)
			var dpad *tensor.Tensor
			if g.Needs[1] {
				dpad = Sub(Sum(dy), Sum(dx)) // what fell on padding
			}
			return []*tensor.Tensor{dx, dpad}
		},
	}, func(c *eager.Call, outs []*tensor.Tensor) {
		x, a := c.Inputs[0], c.Attrs.(PatchesAttrs)
		g := newGeometry(x.Shape(), a.Window)
		xb, ob, pb := x.HostBytes(), outs[0].HostBytes(), c.Inputs[1].HostBytes()
		if len(ob) == 0 {
			return
		}
		switch x.DType().Size() {
		case 1:
			patchesKernel(g, xb, ob, pb[0])
		case 4:
			patchesKernel(g, view32(xb), view32(ob), view32(pb)[0])
		case 8:
			patchesKernel(g, view64(xb), view64(ob), view64(pb)[0])
		}
	}))

	scatterPatchesOp = eager.Register(cpuKernels{
		f32: scatterPatchesNum[float32], f64: scatterPatchesNum[float64], i32: scatterPatchesNum[int32],
		i64: scatterPatchesNum[int64], u8: scatterPatchesNum[uint8],
	}.register(&eager.Op{
		Name: "ScatterPatches", Inputs: 1, DTypes: numericTypes,
		Infer: func(c *eager.Call) []eager.Out {
			a := c.Attrs.(PatchesAttrs)
			a.Window = a.Window.normalized(c, a.Operand)
			c.Attrs = a
			if want := patchesShape(newGeometry(a.Operand, a.Window)); !want.Equal(c.Inputs[0].Shape()) {
				c.Fail(tensor.ErrShape, "patches have shape %v, the window gives %v", c.Inputs[0].Shape(), want)
			}
			return c.Out1(c.Inputs[0].DType(), a.Operand)
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			dy := g.OutGrads[0]
			return []*tensor.Tensor{eager.Run1(extractPatchesOp, g.Attrs, dy, ScalarLike(dy, 0))}
		},
	}))
}

func scatterPatchesNum[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(PatchesAttrs)
	scatterPatchesKernel(newGeometry(a.Operand, a.Window), data[T](c.Inputs[0]), data[T](outs[0]))
}

// ExtractPatches lays the window over x (padded with pad, a scalar of x's
// dtype) and returns every window's taps: x: [n...] -> [out..., window...],
// where out[d] is the number of window positions along dimension d. It is
// the im2col of convolution in any number of dimensions, and the adjoint of
// ScatterPatches.
func ExtractPatches(x, pad *tensor.Tensor, w Window) *tensor.Tensor {
	return eager.Run1(extractPatchesOp, PatchesAttrs{Window: w}, x, pad)
}

// ScatterPatches is the adjoint of ExtractPatches: it adds each patch
// element back to the operand position it came from (col2im). patches:
// [out..., window...] -> operand.
func ScatterPatches(patches *tensor.Tensor, operand tensor.Shape, w Window) *tensor.Tensor {
	return eager.Run1(scatterPatchesOp, PatchesAttrs{Window: w, Operand: operand.Clone()}, patches)
}

// SamePadding returns TensorFlow's SAME padding for one dimension of size n:
// the output has ceil(n/stride) positions and the padding is split with the
// extra element at the high end.
func SamePadding(n, window, stride, dilation int) [2]int {
	out := (n + stride - 1) / stride
	span := (window-1)*dilation + 1
	total := max((out-1)*stride+span-n, 0)
	return [2]int{total / 2, total - total/2}
}
