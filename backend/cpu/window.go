package cpu

import (
	"github.com/eagerflow/eagerflow/internal/hostmem"

	"slices"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/checked"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Windows laid over operands, as the window kernels walk them, and the
// kernels of ExtractPatches and ScatterPatches (ops/window.go).

// geometry is a window laid over one operand shape. Kernels walk it in
// rows: runs of window positions along rowDim, the innermost output
// dimension with more than one position (the ones after it have one).
type geometry struct {
	in, out, win tensor.Shape
	src          [][]int // per dimension: operand index of (o, k) at o*win+k, or -1 for padding
	offs         [][]int // per dimension: operand offset of window o's first tap, or -1 unless the window is inside
	woff         []int   // operand offsets of the taps of an inside window, relative to its first tap
	xs           []int   // operand strides
	rowDim       int
	rowInside    bool // every window position along rowDim is inside
	rowStep      int  // operand distance between neighbouring windows of a row
}

// geometryOf is kernelGeometry for kernel call c, which fails with
// device.ErrOutOfMemory, before anything is built, when the geometry's
// tables would not fit in memory (a window of huge extent over huge
// padding: countable, as the shape rule checks, but no machine's).
func geometryOf(c *eager.Call, in tensor.Shape, w ops.Window) *geometry {
	if len(in) > 0 {
		// src and offs: out*(win+1) ints per dimension; woff: the taps.
		out := w.OutShape(in)
		entries, taps, ok := 0, 1, true
		for d := range in {
			n, ok1 := checked.Mul(out[d], w.Dims[d]+1)
			var ok2, ok3 bool
			entries, ok2 = checked.Add(entries, n)
			taps, ok3 = checked.Mul(taps, w.Dims[d])
			ok = ok && ok1 && ok2 && ok3
		}
		if out.NumElements() == 0 {
			taps = 0 // newGeometry lists no taps for an empty output
		}
		bytes, ok4 := checked.Mul(entries+taps, 8)
		var err error
		if ok && ok4 && entries+taps >= 0 {
			err = device.CheckAlloc(c.Device, bytes)
		}
		if !ok || !ok4 || err != nil {
			c.Fail(device.ErrOutOfMemory, "the window %v over %v needs tables of more bytes than memory holds", w, in)
		}
	}
	return kernelGeometry(in, w)
}

// kernelGeometry is newGeometry for a kernel: a rank-0 operand (one
// element, a window of none) is walked as a vector of one element under a
// window of one, which touches the same element and writes the same flat
// output.
func kernelGeometry(in tensor.Shape, w ops.Window) *geometry {
	if len(in) == 0 {
		return newGeometry(tensor.Shape{1}, ops.Window{Dims: []int{1}, Strides: []int{1}, Padding: [][2]int{{0, 0}},
			BaseDilation: []int{1}, WindowDilation: []int{1}})
	}
	return newGeometry(in, w)
}

func newGeometry(in tensor.Shape, w ops.Window) *geometry {
	r := in.Rank()
	g := &geometry{in: in, out: make(tensor.Shape, r), win: slices.Clone(tensor.Shape(w.Dims)),
		src: make([][]int, r), offs: make([][]int, r), xs: tensor.Strides(in, nil)}
	positions := w.OutShape(in)
	for d := 0; d < r; d++ {
		n, o, k := in[d], positions[d], w.Dims[d]
		g.out[d] = o
		g.src[d] = make([]int, o*k)
		g.offs[d] = make([]int, o)
		for oi := 0; oi < o; oi++ {
			inside := w.BaseDilation[d] == 1
			for ki := 0; ki < k; ki++ {
				p := oi*w.Strides[d] + ki*w.WindowDilation[d] - w.Padding[d][0]
				idx := -1
				if p >= 0 && p%w.BaseDilation[d] == 0 && p/w.BaseDilation[d] < n {
					idx = p / w.BaseDilation[d]
				}
				g.src[d][oi*k+ki] = idx
				inside = inside && idx >= 0
			}
			g.offs[d][oi] = -1
			if inside {
				g.offs[d][oi] = g.src[d][oi*k] * g.xs[d]
			}
		}
		if o > 1 {
			g.rowDim = d
		}
	}
	if r > 0 && g.out[g.rowDim] <= 1 {
		g.rowDim = r - 1
	}
	if r > 0 {
		ro := g.offs[g.rowDim]
		g.rowInside = !slices.Contains(ro, -1)
		if len(ro) > 1 {
			g.rowStep = ro[1] - ro[0]
		}
	}
	if g.out.NumElements() == 0 {
		return g // no window to walk: no taps
	}
	g.woff = make([]int, 0, g.win.NumElements())
	odometer(g.win, func(k []int) {
		off := 0
		for d, kd := range k {
			off += kd * w.WindowDilation[d] * g.xs[d]
		}
		g.woff = append(g.woff, off)
	})
	return g
}

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

// rows calls fn for each row of window positions: i0 is the flat index of
// the row's first window (the row's windows are i0, i0+1, ...), o its
// output index with o[rowDim] free for the caller, outer the operand offset
// contributed by the other dimensions (-1 when some other dimension puts
// the window on padding), and k scratch space for borderTaps. A window r of
// the row is inside the operand when outer >= 0 and offs[rowDim][r] >= 0;
// its taps are then at outer + offs[rowDim][r] + woff[j].
//
// Rows are split over the CPU's workers along the outermost output
// dimension when there is more than one row there; disjoint says that fn
// may run on different rows at once (true for kernels that only write
// their own outputs).
func (g *geometry) rows(dev *device.CPUDevice, disjoint bool, fn func(i0 int, o []int, outer int, k []int)) {
	if len(g.out) == 0 {
		fn(0, nil, 0, nil)
		return
	}
	if g.out.NumElements() == 0 {
		return
	}
	n := g.out[g.rowDim]
	shape := slices.Clone(g.out)
	shape[g.rowDim] = 1
	perOuter := shape.NumElements() / shape[0] // rows per step of dimension 0
	run := func(lo, hi int) {
		sub := slices.Clone(shape)
		sub[0] = hi - lo
		k := make([]int, len(g.out))
		i0 := lo * perOuter * n
		odometer(sub, func(o []int) {
			o[0] += lo
			outer := 0
			for d, od := range o {
				if d == g.rowDim {
					continue
				}
				if off := g.offs[d][od]; off >= 0 && outer >= 0 {
					outer += off
				} else {
					outer = -1
				}
			}
			fn(i0, o, outer, k)
			o[0] -= lo
			i0 += n
		})
	}
	if !disjoint || g.rowDim == 0 || shape[0] < 2 {
		run(0, shape[0])
		return
	}
	dev.Parallel(shape[0], float64(perOuter*n*len(g.woff)), run)
}

// separableRows reports whether windows at different positions along the
// outermost dimension touch different operand elements, so that scatter
// kernels may run those rows at once.
func (g *geometry) separableRows(w ops.Window) bool {
	return len(w.Dims) > 0 && w.Dims[0] == 1 && w.Strides[0] == 1 && w.BaseDilation[0] == 1 &&
		w.Padding[0] == [2]int{0, 0}
}

// borderTaps calls fn with the operand offset of every tap of window o in
// row-major window order, or -1 for a tap on padding.
func (g *geometry) borderTaps(o, k []int, fn func(off int)) {
	clear(k)
	for range len(g.woff) {
		off := 0
		for d := range o {
			idx := g.src[d][o[d]*g.win[d]+k[d]]
			if idx < 0 {
				off = -1
				break
			}
			off += idx * g.xs[d]
		}
		fn(off)
		for d := len(k) - 1; d >= 0; d-- {
			k[d]++
			if k[d] < g.win[d] {
				break
			}
			k[d] = 0
		}
	}
}

// patchesKernel gathers window taps: out[o, k] = x[tap] or the pad value.
func patchesKernel[T uint8 | uint16 | uint32 | uint64](dev *device.CPUDevice, g *geometry, x, out []T, pad T) {
	nw := len(g.woff)
	ro := g.offs[g.rowDim]
	g.rows(dev, true, func(i0 int, o []int, outer int, kb []int) {
		for r := range g.out[g.rowDim] {
			dst := out[(i0+r)*nw : (i0+r+1)*nw]
			if outer >= 0 && ro[r] >= 0 {
				base := outer + ro[r]
				for j, off := range g.woff {
					dst[j] = x[base+off]
				}
				continue
			}
			o[g.rowDim] = r
			j := 0
			g.borderTaps(o, kb, func(off int) {
				if off >= 0 {
					dst[j] = x[off]
				} else {
					dst[j] = pad
				}
				j++
			})
		}
	})
}

// scatterPatchesKernel is the adjoint: x[tap] += dy[o, k].
func scatterPatchesKernel[T tensor.Num](dev *device.CPUDevice, g *geometry, disjoint bool, dy, out []T) {
	clear(out)
	nw := len(g.woff)
	ro := g.offs[g.rowDim]
	g.rows(dev, disjoint, func(i0 int, o []int, outer int, kb []int) {
		for r := range g.out[g.rowDim] {
			src := dy[(i0+r)*nw : (i0+r+1)*nw]
			if outer >= 0 && ro[r] >= 0 {
				base := outer + ro[r]
				for j, off := range g.woff {
					out[base+off] += src[j]
				}
				continue
			}
			o[g.rowDim] = r
			j := 0
			g.borderTaps(o, kb, func(off int) {
				if off >= 0 {
					out[off] += src[j]
				}
				j++
			})
		}
	})
}

func scatterPatchesNum[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(ops.PatchesAttrs)
	g := geometryOf(c, a.Operand, a.Window)
	scatterPatchesKernel(deviceOf(c), g, g.separableRows(a.Window), data[T](c.Inputs[0]), data[T](outs[0]))
}

func init() {
	kernels{
		f32: scatterPatchesNum[float32], f64: scatterPatchesNum[float64], i32: scatterPatchesNum[int32],
		i64: scatterPatchesNum[int64], u8: scatterPatchesNum[uint8],
	}.register("ScatterPatches")
	anyDType("ExtractPatches", extractPatchesKernel)
}

func extractPatchesKernel(c *eager.Call, outs []*tensor.Tensor) {
	x, a := c.Inputs[0], c.Attrs.(ops.PatchesAttrs)
	g := geometryOf(c, x.Shape(), a.Window)
	xb, ob, pb := x.HostBytes(), outs[0].HostBytes(), c.Inputs[1].HostBytes()
	if len(ob) == 0 {
		return
	}
	switch x.DType().Size() {
	case 1:
		patchesKernel(deviceOf(c), g, xb, ob, pb[0])
	case 2:
		patchesKernel(deviceOf(c), g, hostmem.View16(xb), hostmem.View16(ob), hostmem.View16(pb)[0])
	case 4:
		patchesKernel(deviceOf(c), g, backend.View32(xb), backend.View32(ob), backend.View32(pb)[0])
	case 8:
		patchesKernel(deviceOf(c), g, backend.View64(xb), backend.View64(ob), backend.View64(pb)[0])
	}
}
