package kernels

import (
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Multi-tensor kernels of the global-norm ops (ops.SumOfSquares,
// ops.ScaleEach), over OptimTable's table as the optimizers' steps are (a
// slot a tensor, a block a chunk of OptimChunk elements):
//
//   - sumsq_multi_<slots>_<f32|f64|bf16|f16> (tab, partial): block b
//     writes partial[b], the sum of its chunk's squares in float64 (each
//     square and sum rounded on its own; a half value widened), its
//     threads' sums combined by the reduce kernels' tree; the backend
//     folds the partials after.
//   - scale_multi_<slots>_<f32|f64|bf16|f16> (tab, scale): the slots list
//     (x, out) pairs: out = x·*scale, rounded as Mul's (the half types'
//     product in float32, rounded once).
//   - copy_multi_<slots>_<b8|b16|b32|b64> (tab): the slots list (src,
//     dst) spans of units of that width, each copied (device.SpanCopier:
//     a concatenation's inputs, a launch for many).

func multiKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, slots := range OptimSlotCounts {
		for _, d := range slices.Concat(Floats, Halves) {
			out = append(out, sumSquaresKernel(d, slots), scaleKernel(d, slots))
		}
		for _, ct := range copyTypes {
			out = append(out, copySpansKernel(ct.name, ct.t, slots))
		}
	}
	return out
}

// SumSquaresName and ScaleName name the kernels of slots slots for d.
func SumSquaresName(slots int, d DType) string {
	return Name("sumsq_multi", fmt.Sprint(slots), string(d))
}

// ScaleName is scale_multi's name; see SumSquaresName.
func ScaleName(slots int, d DType) string { return Name("scale_multi", fmt.Sprint(slots), string(d)) }

// CopySpansName is copy_multi's name for units of width (b8, b16, b32,
// b64).
func CopySpansName(slots int, width string) string {
	return Name("copy_multi", fmt.Sprint(slots), width)
}

func copySpansKernel(width string, t ptx.Type, slots int) *ptx.Kernel {
	k := ptx.NewKernel(CopySpansName(slots, width))
	k.ParamBytes("tab", OptimTableSize)
	ptrs, from, end, step, _ := tableChunk(k, 2, slots, 0)
	k.Loop(from, end, step, func(i ptx.Reg) {
		v := k.Load(t, k.Addr(ptrs[0], i, t.Size()))
		k.Store(t, k.Addr(ptrs[1], i, t.Size()), v)
	})
	return k
}

func sumSquaresKernel(d DType, slots int) *ptx.Kernel {
	k := ptx.NewKernel(SumSquaresName(slots, d))
	k.ParamBytes("tab", OptimTableSize)
	partial := k.ParamPtr("partial")
	b := newBlockRows(k, 8)
	ptrs, from, end, step, bid := tableChunk(k, 1, slots, 0)
	acc := k.Reg(ptx.F64)
	k.Op("mov.f64 %s, %s", acc, ptx.Imm(ptx.F64, 0))
	k.Loop(from, end, step, func(i ptx.Reg) {
		v := toCompute(k, d, load(k, d, k.Addr(ptrs[0], i, d.Size())))
		if d != F64 {
			w := k.Reg(ptx.F64)
			k.Op("cvt.f64.f32 %s, %s", w, v)
			v = w
		}
		sq := k.Reg(ptx.F64)
		k.Op("mul.rn.f64 %s, %s, %s", sq, v, v)
		k.Op("add.rn.f64 %s, %s, %s", acc, acc, sq)
	})
	r := b.tree(ptx.F64, acc, func(a, c ptx.Reg) ptx.Reg {
		s := k.Reg(ptx.F64)
		k.Op("add.rn.f64 %s, %s, %s", s, a, c)
		return s
	})
	b.first(func() { store(k, F64, k.Addr(partial, bid, 8), r) })
	return k
}

func scaleKernel(d DType, slots int) *ptx.Kernel {
	k := ptx.NewKernel(ScaleName(slots, d))
	k.ParamBytes("tab", OptimTableSize)
	sp := k.ParamPtr("scale")
	c := d.Compute()
	s := toCompute(k, d, load(k, d, sp))
	ptrs, from, end, step, _ := tableChunk(k, 2, slots, 0)
	k.Loop(from, end, step, func(i ptx.Reg) {
		v := toCompute(k, d, load(k, d, k.Addr(ptrs[0], i, d.Size())))
		r := k.Reg(c.reg())
		k.Op("mul.rn.%s %s, %s, %s", c.reg(), r, v, s)
		store(k, d, k.Addr(ptrs[1], i, d.Size()), fromCompute(k, d, r))
	})
	return k
}
