package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of ReduceWindow, SelectAndScatter and SelectAndGather
// (ops/reduce_window.go).

func reduceWindowKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x, a := c.Inputs[0], c.Attrs.(ops.ReduceWindowAttrs)
	xv, ov, init := data[T](x), data[T](outs[0]), data[T](c.Inputs[1])[0]
	if p, ok := a.SpreadOf(x.Shape(), outs[0].Shape()); ok { // a pooling's sums' gradient
		spreadSums(deviceOf(c), p, xv, ov, init)
		return
	}
	if p, ok := paddedPlaneOf(x.Shape(), a.Window); ok {
		planeReduce(deviceOf(c), p, xv, ov, init, a.Kind)
		return
	}
	if p, ok := paddedChanOf(x.Shape(), a.Window); ok {
		chanReduce(deviceOf(c), p, xv, ov, init, a.Kind)
		return
	}
	g := geometryOf(c, x.Shape(), a.Window)
	ro := g.offs[g.rowDim]
	g.rows(deviceOf(c), true, func(i0 int, o []int, outer int, kb []int) {
		if outer >= 0 && g.rowInside {
			reduceRow(ov[i0:i0+g.out[g.rowDim]], xv[outer+ro[0]:], g.woff, g.rowStep, init, a.Kind)
			return
		}
		for r := range g.out[g.rowDim] {
			acc := init
			if outer >= 0 && ro[r] >= 0 {
				taps := xv[outer+ro[r]:]
				switch a.Kind {
				case ops.ReduceMax:
					for _, off := range g.woff {
						acc = max(acc, taps[off])
					}
				case ops.ReduceMin:
					for _, off := range g.woff {
						acc = min(acc, taps[off])
					}
				default:
					for _, off := range g.woff {
						acc += taps[off]
					}
				}
			} else {
				o[g.rowDim] = r
				g.borderTaps(o, kb, func(off int) {
					v := init
					if off >= 0 {
						v = xv[off]
					}
					acc = fold(a.Kind, acc, v)
				})
			}
			ov[i0+r] = acc
		}
	})
}

// fold combines v into acc as a reduction of kind does.
func fold[T tensor.Num](kind ops.ReduceKind, acc, v T) T {
	switch kind {
	case ops.ReduceMax:
		return max(acc, v)
	case ops.ReduceMin:
		return min(acc, v)
	}
	return acc + v
}

// reduceRow reduces a row of windows that all lie inside the operand, one
// tap at a time across the row (a tight strided loop per tap): window r's
// taps are x[r*step + woff[j]].
func reduceRow[T tensor.Num](out, x []T, woff []int, step int, init T, kind ops.ReduceKind) {
	for r := range out {
		out[r] = init
	}
	for _, off := range woff {
		src := x[off:]
		switch kind {
		case ops.ReduceMax:
			for r := range out {
				out[r] = max(out[r], src[r*step])
			}
		case ops.ReduceMin:
			for r := range out {
				out[r] = min(out[r], src[r*step])
			}
		default:
			for r := range out {
				out[r] += src[r*step]
			}
		}
	}
}

// selected calls fn(window index, operand offset of its chosen element) for
// each window with at least one element inside the operand. Ties go to the
// first element in row-major window order; a NaN wins over numbers; padding
// is never chosen. disjoint is passed to rows.
func selected[T tensor.Num](dev *device.CPUDevice, g *geometry, disjoint bool, x []T, kind ops.SelectKind, fn func(i, at int)) {
	ge := kind == ops.SelectGE
	ro := g.offs[g.rowDim]
	g.rows(dev, disjoint, func(i0 int, o []int, outer int, kb []int) {
		for r := range g.out[g.rowDim] {
			at := -1
			if outer >= 0 && ro[r] >= 0 {
				at = firstExtreme(x[outer+ro[r]:], g.woff, ge) + outer + ro[r]
			} else {
				o[g.rowDim] = r
				g.borderTaps(o, kb, func(off int) {
					if off < 0 {
						return
					}
					if at < 0 {
						at = off
						return
					}
					v, best := x[off], x[at]
					if beats(v, best, ge) {
						at = off
					}
				})
			}
			if at >= 0 {
				fn(i0+r, at)
			}
		}
	})
}

// beats reports whether tap value v displaces best as the window's
// selection, taps taken in order: strictly larger (ge) or smaller, or the
// first NaN.
func beats[T tensor.Num](v, best T, ge bool) bool {
	return (ge && v > best) || (!ge && v < best) || (v != v && best == best)
}

// firstExtreme returns the offset (one of woff) of the first largest (ge)
// or smallest element of taps, NaN counting as the extreme. Random data
// makes "which tap wins" unpredictable, so the common path avoids branches:
// the extreme by max/min, then its first position by conditional moves.
func firstExtreme[T tensor.Num](taps []T, woff []int, ge bool) int {
	best := taps[woff[0]]
	if ge {
		for _, off := range woff[1:] {
			best = max(best, taps[off])
		}
	} else {
		for _, off := range woff[1:] {
			best = min(best, taps[off])
		}
	}
	if best != best { // a NaN: the first one wins
		for _, off := range woff {
			if v := taps[off]; v != v {
				return off
			}
		}
	}
	at := woff[len(woff)-1]
	for j := len(woff) - 2; j >= 0; j-- {
		off := woff[j]
		if taps[off] == best {
			at = off
		}
	}
	return at
}

func selectAndScatterKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x, src, a := c.Inputs[0], data[T](c.Inputs[1]), c.Attrs.(ops.SelectAttrs)
	ov, init := data[T](outs[0]), data[T](c.Inputs[2])[0]
	// The fast paths fill each band of rows with init just before they
	// scatter into it, on the worker that does (in parallel, and while the
	// band is in cache).
	fill := func(s []T) { fillWith(s, init) }
	if p, ok := planeOf(x.Shape(), a.Window); ok && p.sh >= p.kh && p.sw >= p.kw {
		planeScatter(deviceOf(c), p, data[T](x), src, ov, a.Select == ops.SelectGE, fill)
		return
	}
	if p, ok := chanOf(x.Shape(), a.Window); ok && p.sh >= p.kh && p.kh == 2 && p.kw == 2 && a.Select == ops.SelectGE {
		chanScatter(deviceOf(c), p, data[T](x), src, ov, fill)
		return
	}
	if p, ok := paddedChanOf(x.Shape(), a.Window); ok {
		chanScatterClipped(deviceOf(c), p, data[T](x), src, ov, a.Select == ops.SelectGE, fill)
		return
	}
	if p, ok := paddedPlaneOf(x.Shape(), a.Window); ok {
		planeScatterClipped(deviceOf(c), p, data[T](x), src, ov, a.Select == ops.SelectGE, fill)
		return
	}
	fill(ov)
	g := geometryOf(c, x.Shape(), a.Window)
	selected(deviceOf(c), g, g.separableRows(a.Window), data[T](x), a.Select, func(i, at int) { ov[at] += src[i] })
}

// fillWith sets every element of s to v; +0 (a pool's gradient) takes
// memclr, which beats the loop.
func fillWith[T tensor.Num](s []T, v T) {
	if v == 0 && !math.Signbit(float64(v)) {
		clear(s)
		return
	}
	for i := range s {
		s[i] = v
	}
}

func selectAndGatherKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x, dy, a := c.Inputs[0], data[T](c.Inputs[1]), c.Attrs.(ops.SelectAttrs)
	ov := data[T](outs[0])
	clear(ov)
	selected(deviceOf(c), geometryOf(c, x.Shape(), a.Window), true, data[T](x), a.Select, func(i, at int) { ov[i] = dy[at] })
}

func numKernelSet(f32, f64, i32, i64, u8 eager.Kernel) kernels {
	return kernels{f32: f32, f64: f64, i32: i32, i64: i64, u8: u8}
}

func init() {
	numKernelSet(reduceWindowKernel[float32], reduceWindowKernel[float64], reduceWindowKernel[int32], reduceWindowKernel[int64], reduceWindowKernel[uint8]).register("ReduceWindow")
	numKernelSet(selectAndScatterKernel[float32], selectAndScatterKernel[float64], selectAndScatterKernel[int32], selectAndScatterKernel[int64], selectAndScatterKernel[uint8]).register("SelectAndScatter")
	numKernelSet(selectAndGatherKernel[float32], selectAndGatherKernel[float64], selectAndGatherKernel[int32], selectAndGatherKernel[int64], selectAndGatherKernel[uint8]).register("SelectAndGather")
}
