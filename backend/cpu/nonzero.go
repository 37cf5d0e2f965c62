package cpu

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Nonzero (ops/mask.go) on the CPU: where the portable kernel (package
// move's) reads the input through a copy and tests each element through
// a closure, a branch on each (half of a random mask's mispredicted:
// 13 ns an element), the elements are counted in chunks over the
// workers, and each chunk's positions compacted without a branch (each
// position written, the cursor moved by its flag) at its offset.

// nonzeroChunk is the elements a worker counts and compacts at once;
// nonzeroRun those compacted into a scratch before they are copied out.
const (
	nonzeroChunk = 1 << 16
	nonzeroRun   = 4096
)

// nonzeroKernel is Nonzero's kernel, flags(x, lo, hi, f) setting f to
// the flags (1: nonzero) of x's elements [lo, hi).
func nonzeroKernel(flags func(x *tensor.Tensor, lo, hi int, f []uint8)) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) { nonzeroPositions(c, outs[0], flags) }
}

// nonzeroPositions writes into out the positions of the call's input's
// nonzero elements.
func nonzeroPositions(c *eager.Call, out *tensor.Tensor, flags func(x *tensor.Tensor, lo, hi int, f []uint8)) {
	x := c.Inputs[0]
	flag := func(lo, hi int, f []uint8) { flags(x, lo, hi, f) }
	n := x.NumElements()
	chunks := (n + nonzeroChunk - 1) / nonzeroChunk
	counts := make([]int, chunks+1)
	dev := deviceOf(c)
	dev.Parallel(chunks, nonzeroChunk, func(lo, hi int) {
		f := make([]uint8, nonzeroChunk)
		for ch := lo; ch < hi; ch++ {
			a, b := ch*nonzeroChunk, min((ch+1)*nonzeroChunk, n)
			flag(a, b, f[:b-a])
			k := 0
			for _, v := range f[:b-a] {
				k += int(v)
			}
			counts[ch+1] = k
		}
	})
	for ch := range chunks {
		counts[ch+1] += counts[ch]
	}
	if want := out.Dim(0); counts[chunks] != want {
		c.Fail(tensor.ErrValue, "the input has %d nonzero elements, the op was made for %d", counts[chunks], want)
	}
	rank, ov := x.Rank(), data[int64](out)
	dev.Parallel(chunks, nonzeroChunk*2, func(lo, hi int) {
		f, run := make([]uint8, nonzeroRun), make([]int64, nonzeroRun)
		multi := make([]int, rank)
		for ch := lo; ch < hi; ch++ {
			at := counts[ch]
			for a := ch * nonzeroChunk; a < min((ch+1)*nonzeroChunk, n); a += nonzeroRun {
				b := min(a+nonzeroRun, n)
				flag(a, b, f[:b-a])
				k := 0
				for i, v := range f[:b-a] {
					run[k] = int64(a + i)
					k += int(v)
				}
				if rank == 1 {
					copy(ov[at:], run[:k])
				} else {
					for j, p := range run[:k] {
						for d, m := range tensor.MultiIndex(x.Shape(), nil, int(p), multi) {
							ov[(at+j)*rank+d] = int64(m)
						}
					}
				}
				at += k
			}
		}
	})
}

// numFlags sets f[i] to 1 where x's element lo+i is nonzero (NaN is;
// -0 is not), else 0.
func numFlags[T tensor.Num](x *tensor.Tensor, lo, hi int, f []uint8) {
	for i, v := range data[T](x)[lo:hi] {
		var b uint8
		if v != 0 {
			b = 1
		}
		f[i] = b
	}
}

// boolFlags is numFlags for Bool: its bytes (0 or 1) as they are.
func boolFlags(x *tensor.Tensor, lo, hi int, f []uint8) { copy(f, x.HostBytes()[lo:hi]) }

func init() {
	kernels{
		f32: nonzeroKernel(numFlags[float32]), f64: nonzeroKernel(numFlags[float64]), i32: nonzeroKernel(numFlags[int32]),
		i64: nonzeroKernel(numFlags[int64]), u8: nonzeroKernel(numFlags[uint8]), b: nonzeroKernel(boolFlags),
	}.register("Nonzero")
}
