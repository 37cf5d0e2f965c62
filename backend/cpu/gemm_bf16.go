package cpu

import (
	"math"
	"unsafe"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// bfloat16 products on VDPBF16PS (AVX512_BF16, which Zen 4, Zen 5 and
// Intel's Cooper Lake and Sapphire Rapids have): the operands are packed
// as pairs of bfloat16 along k, each 32-bit lane of a vector a pair, and
// the micro-kernel (sbf16gemmAVX512x12, gemm_bf16_amd64.s) adds each
// pair's two products into float32 sums, at twice float32 FMA's rate of
// products; the result is rounded to bfloat16 once, by VCVTNEPS2BF16
// (nearest, ties to even, as tensor.ToBF16; the float32 denormals it reads
// as zero are rounded again by ToBF16: roundBF16). Elsewhere (no such
// CPU, the purego build) bfloat16 products run through float32, as every
// op on the half types does.

// bf16MR and bf16NR are the micro-kernel's tile: rows of A, columns of B.
const bf16MR, bf16NR = 12, 32

// gemmBF16 computes a·b, a [m k] (stored [k m] where transA) and b [k
// n] (stored [n k] where transB) of bfloat16, in float32 sums handed to
// out a tile at a time (rows x cols at row i0, column j0; tile's rows
// bf16NR apart), while the tile is in the cache; out runs on the
// device's workers (on this goroutine alone where dev is nil), for
// disjoint tiles. The CPU must have AVX512_BF16 (haveAVX512BF16).
func gemmBF16(dev *device.CPUDevice, m, n, k int, a []tensor.BF16, transA bool, b []tensor.BF16, transB bool, out func(i0, j0, rows, cols int, tile []float32)) {
	pb := packBF16(dev, k, n, b, transB)
	defer pb.free()
	gemmBF16Packed(dev, m, a, transA, pb, out)
}

// bf16Panels is a B operand packed for the micro-kernel: per block of 32
// columns, kp steps of 32 pairs (a product with several A operands, a
// convolution's images, packs its filter once).
type bf16Panels struct {
	p            []uint32
	k, n, kp, nb int
	scratch      *[]byte
}

// packBF16 packs b [k n] (stored [n k] where transB).
func packBF16(dev *device.CPUDevice, k, n int, b []tensor.BF16, transB bool) bf16Panels {
	kp := max((k+1)/2, 1) // pairs along k; an odd k's last pair pads with zero, k = 0 is one pair of zeros
	nb := (n + bf16NR - 1) / bf16NR
	bf, scratch := gemmScratch[float32](nb * kp * bf16NR) // every element is written
	bp := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(bf))), len(bf))
	parallelOn(dev, nb, float64(2*kp*bf16NR), func(lo, hi int) {
		for blk := lo; blk < hi; blk++ {
			j0 := blk * bf16NR
			packPairs(bp[blk*kp*bf16NR:(blk+1)*kp*bf16NR], b, k, n, j0, min(bf16NR, n-j0), bf16NR, transB)
		}
	})
	return bf16Panels{p: bp, k: k, n: n, kp: kp, nb: nb, scratch: scratch}
}

func (pb bf16Panels) free() { putGemmScratch(pb.scratch) }

// gemmBF16Packed is gemmBF16 of a [m k] against packed panels.
func gemmBF16Packed(dev *device.CPUDevice, m int, a []tensor.BF16, transA bool, pb bf16Panels, out func(i0, j0, rows, cols int, tile []float32)) {
	gemmBF16Into(dev, m, a, transA, pb, nil, out)
}

// gemmBF16Into is gemmBF16Packed that stores whole tiles of rows of A read
// in place straight into dst [m n] where dst is not nil, rounded by the
// micro-kernel (sbf16gemmAVX512x12ur), and hands out the rest as float32;
// out must then round into dst as storeBF16 does.
func gemmBF16Into(dev *device.CPUDevice, m int, a []tensor.BF16, transA bool, pb bf16Panels, dst []tensor.BF16, out func(i0, j0, rows, cols int, tile []float32)) {
	k, n, nb, bp := pb.k, pb.n, pb.nb, pb.p
	kp := pb.kp
	// A, a block of 12 rows at a time (a task each), against every block
	// of B, each tile handed to out.
	// Rows of A [m k] stored as such, k even, are read in place, a pair a
	// 32-bit word (sbf16gemmAVX512x12u); other blocks are packed.
	inPlace := !transA && k%2 == 0 && k > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(a)))%4 == 0
	mb := (m + bf16MR - 1) / bf16MR
	parallelOn(dev, mb, float64(bf16MR*n*k)/100, func(lo, hi int) {
		var ap []uint32
		var tile [bf16MR * bf16NR]float32
		for rb := lo; rb < hi; rb++ {
			i0 := rb * bf16MR
			rows := min(bf16MR, m-i0)
			direct := inPlace && rows == bf16MR
			if !direct {
				if ap == nil {
					s, buf := gemmScratch[float32](kp * bf16MR)
					defer putGemmScratch(buf)
					ap = unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
				}
				packPairs(ap, a, k, m, i0, rows, bf16MR, !transA)
			}
			for blk := range nb {
				j0 := blk * bf16NR
				if direct && dst != nil && j0+bf16NR <= n {
					sbf16gemmAVX512x12ur(kp, (*uint32)(unsafe.Pointer(&a[i0*k])), k/2, &bp[blk*kp*bf16NR], (*uint16)(&dst[i0*n+j0]), n)
					continue
				}
				if direct {
					sbf16gemmAVX512x12u(kp, (*uint32)(unsafe.Pointer(&a[i0*k])), k/2, &bp[blk*kp*bf16NR], &tile[0], bf16NR)
				} else {
					sbf16gemmAVX512x12(kp, &ap[0], &bp[blk*kp*bf16NR], &tile[0], bf16NR)
				}
				out(i0, j0, rows, min(bf16NR, n-j0), tile[:])
			}
		}
	})
}

// parallelOn is dev.Parallel, or fn over the whole range on this
// goroutine where dev is nil.
func parallelOn(dev *device.CPUDevice, n int, cost float64, fn func(lo, hi int)) {
	if dev == nil {
		if n > 0 {
			fn(0, n)
		}
		return
	}
	dev.Parallel(n, cost, fn)
}

// packPairs packs lines [l0, l0+count) of an operand of depth k into dst,
// width lines per pair step (dst[p*width+l] holds line l0+l's values at
// depth 2p and 2p+1, the first in the low half; lines past count and the
// depth past k are zero). The operand holds the lines along its rows
// ([lines k], row-major: a pair is two neighbours) where byLine, else
// along its columns ([k lines]: a pair is two rows apart) of lines lines
// in all.
func packPairs(dst []uint32, v []tensor.BF16, k, lines, l0, count, width int, byLine bool) {
	kp := max((k+1)/2, 1) // k = 0: one pair of zeros
	if count < width || k%2 == 1 || k == 0 {
		clear(dst[:kp*width]) // the padding lines, an odd depth's half pair
	}
	if k == 0 {
		return
	}
	if byLine && k%2 == 0 && k > 0 && uintptr(unsafe.Pointer(&v[0]))%4 == 0 {
		// Each pair is one aligned 32-bit word of the row.
		for l := range count {
			row := v[(l0+l)*k : (l0+l+1)*k]
			words := unsafe.Slice((*uint32)(unsafe.Pointer(&row[0])), k/2)
			for p, w := range words {
				dst[p*width+l] = w
			}
		}
		return
	}
	if byLine {
		for l := range count {
			row := v[(l0+l)*k : (l0+l+1)*k]
			for p := range k / 2 {
				dst[p*width+l] = uint32(row[2*p]) | uint32(row[2*p+1])<<16
			}
			if k%2 == 1 {
				dst[(kp-1)*width+l] = uint32(row[k-1])
			}
		}
		return
	}
	if whole := k / 2; haveAVX512 && count > 0 && whole > 0 {
		_ = v[(2*whole-1)*lines+l0+count-1] // the last value read
		spairsbf16(&dst[0], width, (*uint16)(&v[l0]), lines, count, whole)
		if k%2 == 1 {
			for l, x := range v[(k-1)*lines+l0 : (k-1)*lines+l0+count] {
				dst[(kp-1)*width+l] = uint32(x)
			}
		}
		return
	}
	for p := range kp {
		r0 := v[2*p*lines+l0 : 2*p*lines+l0+count]
		out := dst[p*width : p*width+count]
		if 2*p+1 == k {
			for l, x := range r0 {
				out[l] = uint32(x)
			}
			continue
		}
		r1 := v[(2*p+1)*lines+l0 : (2*p+1)*lines+l0+count]
		for l, x := range r0 {
			out[l] = uint32(x) | uint32(r1[l])<<16
		}
	}
}

// matmulBF16Kernel is MatMul of bfloat16 operands on VDPBF16PS: each
// batch's product summed in float32 and rounded once.
func matmulBF16Kernel(c *eager.Call, outs []*tensor.Tensor) {
	a, b, at := c.Inputs[0], c.Inputs[1], c.Attrs.(opattr.MatMulAttrs)
	m, k, n := at.Dims(a.Shape(), b.Shape())
	av, bv, ov := data[tensor.BF16](a), data[tensor.BF16](b), data[tensor.BF16](outs[0])
	if m*n == 0 {
		return
	}
	batch := outs[0].NumElements() / (m * n)
	aStep, bStep := m*k, k*n
	if a.Rank() == 2 {
		aStep = 0
	}
	if b.Rank() == 2 {
		bStep = 0
	}
	dev := deviceOf(c)
	for i := range batch {
		o := ov[i*m*n : (i+1)*m*n]
		pb := packBF16(dev, k, n, bv[i*bStep:i*bStep+k*n], at.TransposeB)
		gemmBF16Into(dev, m, av[i*aStep:i*aStep+m*k], at.TransposeA, pb, o,
			func(i0, j0, rows, cols int, tile []float32) { storeBF16(o, n, i0, j0, rows, cols, tile) })
		pb.free()
	}
}

// storeBF16 rounds a tile of float32 sums (rows x cols, rows bf16NR
// apart) into o [.. n] at row i0, column j0 (roundBF16).
func storeBF16(o []tensor.BF16, n, i0, j0, rows, cols int, tile []float32) {
	for r := range rows {
		roundBF16(o[(i0+r)*n+j0:(i0+r)*n+j0+cols], tile[r*bf16NR:r*bf16NR+cols])
	}
}

// roundBF16 sets dst to src rounded to bfloat16, as tensor.ToBF16 does:
// 16 at a time by VCVTNEPS2BF16 where the CPU has it, then, where it saw
// any, the float32 denormals it reads as zero, and the tail, by ToBF16.
func roundBF16(dst []tensor.BF16, src []float32) {
	src = src[:len(dst)]
	vec := 0
	if haveAVX512BF16 {
		vec = len(dst) &^ 15
	}
	if vec > 0 && scvtbf16((*uint16)(&dst[0]), &src[0], vec) != 0 {
		for i, v := range src[:vec] {
			if b := math.Float32bits(v); b&0x7f800000 == 0 && b&0x007fffff != 0 {
				dst[i] = tensor.ToBF16(v)
			}
		}
	}
	for i := vec; i < len(dst); i++ {
		dst[i] = tensor.ToBF16(src[i])
	}
}

// fusedMatMulBF16Kernel is FusedMatMul of bfloat16 operands: each tile's
// float32 sums plus the bias, through the activation, rounded once, as
// the float32 kernel's result would be.
func fusedMatMulBF16Kernel(c *eager.Call, outs []*tensor.Tensor) {
	x, w, out := c.Inputs[0], c.Inputs[1], outs[0]
	m, k, n := x.Dim(0), x.Dim(1), w.Dim(1)
	if m*n == 0 {
		return
	}
	relu := c.Attrs.(ops.FusedMatMulAttrs).Activation == ops.ReluActivation
	bias := make([]float32, n)
	for j, b := range data[tensor.BF16](c.Inputs[2]) {
		bias[j] = b.Float32()
	}
	ov := data[tensor.BF16](out)
	gemmBF16(deviceOf(c), m, n, k, data[tensor.BF16](x), false, data[tensor.BF16](w), false, func(i0, j0, rows, cols int, tile []float32) {
		biasRelu(tile, rows, cols, bias[j0:], relu)
		storeBF16(ov, n, i0, j0, rows, cols, tile)
	})
}

// biasRelu adds bias (nil: none) to each of a tile's rows of cols sums
// (bf16NR apart) and applies Relu where relu is set, with the vector
// kernels (no branch on the signs).
func biasRelu(tile []float32, rows, cols int, bias []float32, relu bool) {
	for r := range rows {
		sums := tile[r*bf16NR : r*bf16NR+cols]
		if bias != nil {
			addF32(sums, sums, bias[:cols])
		}
		if relu {
			reluLoop(sums, sums)
		}
	}
}

func init() {
	if useVDPBF16PS {
		registerBF16Products(true)
	}
}

// registerBF16Products registers the bfloat16 kernels of the products
// that run on VDPBF16PS (MatMul, FusedMatMul, the convolutions forward
// and backward), or, on false, removes them: those products then widen
// to float32.
func registerBF16Products(on bool) {
	for op, k := range map[string]eager.Kernel{
		"MatMul": matmulBF16Kernel, "FusedMatMul": fusedMatMulBF16Kernel,
		"Conv2DGemm": conv2DBF16Kernel, "FusedConv2D": fusedConv2DBF16Kernel, "FusedConv2DBackprop": fusedConv2DBackpropBF16Kernel,
	} {
		if !on {
			k = nil
		}
		eager.RegisterKernel(op, device.CPU, tensor.BFloat16, k)
	}
}
