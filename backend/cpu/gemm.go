package cpu

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// GEMM follows the layered blocking of BLIS-style libraries, turned
// around because the micro-kernels broadcast from A and load vectors of B
// (BLIS's kernels broadcast from B): per worker, depth blocks of
// gemmKCBytes per row; A packed into panels mr rows tall, gemmMCBytes of
// them at a time (L3); B packed into panels nr columns wide, a block of
// gemmNCBytes at a time (L2); and for each A panel, which stays in L1, the
// block's B panels stream past it while the micro-kernel computes each
// mr x nr tile of C with its accumulators in registers.
//
// On this project's machine (Zen 4: 32 KiB L1d, 1 MiB L2 per core), depth
// blocks of 1536 bytes per row (384 float32, 192 float64: an 18 KiB A
// panel) and B blocks of 256 KiB measured best. Against the order before
// (B panels of 512 float32 outer, A panels from L2 inner: a 64 KiB B
// panel never fit L1), 1024 and 2048 float32 products ran 5-10% faster
// and 1024 float64 10-15% faster on both cores (best of 4 and means of 4,
// three interleaved rounds); B blocks of 192 to 512 KiB, depth blocks of
// 1 and 2 KiB, A chunks of 512 KiB to 4 MiB, and packing B always measured
// within noise or worse. Float64 takes deeper blocks, 3072 bytes (384 per
// row, a 36 KiB A panel), and the 12-row kernels prefetch B 8 rows ahead:
// together 3.3% faster on 1024 float64 products on Zen 4 (benchstat, eight
// interleaved rounds), where each alone measured 1%.
const (
	gemmKCBytes   = 1536
	gemmKCBytes64 = 3072 // float64's
	gemmNCBytes   = 256 << 10
	gemmMCBytes   = 4 << 20
	// gemmPackBMin is the number of row panels of A per worker above
	// which B is packed even when it could be read in place.
	gemmPackBMin = 64
)

type gemmElem interface {
	tensor.Float | int32 | int64 | uint8
}

// gemmKernel is one micro-kernel: it computes the mr x nr tile C = A·B (or
// C += A·B) from a packed panel of A, mr values per k step (a[p*mr+r] is
// row r, column p), and kc rows of nr values of B, ldb elements apart.
type gemmKernel[T gemmElem] struct {
	name   string
	mr, nr int
	asm    func(kc int, a, b *T, ldb int, c *T, ldc int, accumulate int) // nil: goKernel
	// edge is the kernel of the same rows and half the columns, if any: it
	// computes a last column panel of edge.nr columns or fewer in half the
	// time (a product of 10 columns, a classifier's last layer, runs
	// almost twice as fast).
	edge *gemmKernel[T]
}

// asmGemmKernels returns the preferred set of assembly kernels for T on
// this CPU, or nil.
func asmGemmKernels[T gemmElem]() []gemmKernel[T] {
	if sets := asmGemmKernelSets[T](); len(sets) > 0 {
		return sets[0]
	}
	return nil
}

// gemmRowCost is each kernel's relative cost per row of C it computes,
// padding included: the large tiles reuse each loaded vector of B most.
func (k gemmKernel[T]) rowCost() float64 {
	switch {
	case k.mr >= 6:
		return 1
	case k.mr >= 4:
		return 1.15
	}
	return 2
}

// nsPerTile estimates one kc-deep tile's time, for the device's sharder.
func (k gemmKernel[T]) nsPerTile(kc int) float64 {
	fmas := float64(k.mr * k.nr * kc)
	if k.asm != nil {
		return fmas / 32
	}
	return fmas
}

// run computes one tile. The slices are checked to hold everything the
// kernel reads and writes, so an assembly kernel never leaves them.
func (k gemmKernel[T]) run(kc int, a, b []T, ldb int, c []T, ldc int, accumulate bool) {
	_ = a[kc*k.mr-1]
	_ = b[(kc-1)*ldb+k.nr-1]
	_ = c[(k.mr-1)*ldc+k.nr-1]
	if k.asm == nil {
		goKernel(k.mr, k.nr, kc, a, b, ldb, c, ldc, accumulate)
		return
	}
	acc := 0
	if accumulate {
		acc = 1
	}
	k.asm(kc, &a[0], &b[0], ldb, &c[0], ldc, acc)
}

// goKernel is the pure-Go micro-kernel, the twin of every assembly one: it
// sums each row's products from zero, then stores or adds the row, as they
// do. nr is at most 64.
func goKernel[T gemmElem](mr, nr, kc int, a, b []T, ldb int, c []T, ldc int, accumulate bool) {
	var row [64]T
	for r := 0; r < mr; r++ {
		t := row[:nr]
		clear(t)
		for p := 0; p < kc; p++ {
			s := a[p*mr+r]
			for j, bv := range b[p*ldb : p*ldb+nr] {
				t[j] += s * bv
			}
		}
		crow := c[r*ldc : r*ldc+nr]
		if accumulate {
			for j, v := range t {
				crow[j] += v
			}
		} else {
			copy(crow, t)
		}
	}
}

// gemmKernels lists the micro-kernels for T on this CPU, largest tile
// first: the assembly ones where there are, else the Go kernel in a 4-row
// and a 1-row shape. The lists are built once.
func gemmKernels[T gemmElem]() []gemmKernel[T] {
	var ks any
	switch any(*new(T)).(type) {
	case float32:
		ks = kernelsF32
	case float64:
		ks = kernelsF64
	case int32:
		ks = kernelsI32
	case int64:
		ks = kernelsI64
	default:
		ks = kernelsU8
	}
	return ks.([]gemmKernel[T])
}

var (
	kernelsF32 = buildGemmKernels[float32]()
	kernelsF64 = buildGemmKernels[float64]()
	kernelsI32 = buildGemmKernels[int32]()
	kernelsI64 = buildGemmKernels[int64]()
	kernelsU8  = buildGemmKernels[uint8]()
)

func buildGemmKernels[T gemmElem]() []gemmKernel[T] {
	if ks := asmGemmKernels[T](); len(ks) > 0 {
		return ks
	}
	return []gemmKernel[T]{{name: "go4x16", mr: 4, nr: 16}, {name: "go1x16", mr: 1, nr: 16}}
}

// pickGemmKernel chooses the kernel with the least estimated cost for m
// rows: rows padded to whole tiles, weighted by the kernel's speed.
func pickGemmKernel[T gemmElem](m int) gemmKernel[T] {
	ks := gemmKernels[T]()
	best, bestCost := ks[0], -1.0
	for _, k := range ks {
		cost := float64((m+k.mr-1)/k.mr*k.mr) * k.rowCost()
		if bestCost < 0 || cost < bestCost {
			best, bestCost = k, cost
		}
	}
	return best
}

// gemmPaddedWork estimates an m x n product's micro-kernel work per unit
// of depth: the kernel pickGemmKernel takes for m, its rows padded to whole
// tiles and weighted by its speed, times the columns padded to whole
// panels (a last panel its half-width edge kernel covers counts half).
// Products of equal depth compare by it.
func gemmPaddedWork[T gemmElem](m, n int) float64 {
	k := pickGemmKernel[T](m)
	rows := float64((m+k.mr-1)/k.mr*k.mr) * k.rowCost()
	cols := n / k.nr * k.nr
	if rest := n - cols; rest > 0 {
		cols += k.nr
		if k.edge != nil && rest <= k.edge.nr {
			cols -= k.nr - k.edge.nr
		}
	}
	return rows * float64(cols)
}

// turnPays reports whether a convolution's product of m x n outputs (m
// output channels) runs faster turned, as its n x m transpose with the
// other operand packed transposed: where the 12-row float32 kernels pack
// a transposed A through AVX-512 (packsA12T), the m columns fill whole
// kernel panels, and the turned tiles pad less. (With 16 output channels
// the turned product ran on the half-width edge kernel alone and a
// [32 3 32 32] convolution's step took 18% longer on Zen 4.)
func turnPays[T gemmElem](m, n int) bool {
	return packsA12T[T]() && m%pickGemmKernel[T](n).nr == 0 && gemmPaddedWork[T](n, m) < gemmPaddedWork[T](m, n)
}

// gemm computes c = op(a)·op(b) for row-major matrices: op(a) is [m, k] (a
// is stored [k, m] when transA), op(b) is [k, n] (b is stored [n, k] when
// transB), and c, [m, n], is overwritten. Work is split across the
// device's workers by rows of c, or by columns when c has few rows.
func gemm[T gemmElem](dev *device.CPUDevice, m, n, k int, a []T, transA bool, b []T, transB bool, c []T) {
	gemmAcc(dev, m, n, k, a, transA, b, transB, c, false)
}

// gemmAcc is gemm that adds op(a)·op(b) to c when accumulate is set, and
// runs on the calling goroutine alone when dev is nil (for callers that
// split their work across the workers themselves).
func gemmAcc[T gemmElem](dev *device.CPUDevice, m, n, k int, a []T, transA bool, b []T, transB bool, c []T, accumulate bool) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		if !accumulate {
			clear(c[:m*n])
		}
		return
	}
	gemmWith(dev, pickGemmKernel[T](m), m, n, k, a, transA, b, transB, c, accumulate)
}

// gemmOperands is one call's matrices and flags, shared by the packing and
// tile loops.
type gemmOperands[T gemmElem] struct {
	kern           gemmKernel[T]
	m, n, k        int
	a, b, c        []T
	transA, transB bool
	accumulate     bool // add to c instead of overwriting it
}

// gemmBlock is one (column block, depth block) step: B's packed panels (or
// only the ragged last panel when B is read in place) and the block's place.
type gemmBlock[T gemmElem] struct {
	bp         []T
	packedB    bool
	jc, ncur   int
	pc, kcur   int
	accumulate bool
}

func gemmWith[T gemmElem](dev *device.CPUDevice, kern gemmKernel[T], m, n, k int, a []T, transA bool, b []T, transB bool, c []T, accumulate bool) {
	g := gemmOperands[T]{kern: kern, m: m, n: n, k: k, a: a, b: b, c: c, transA: transA, transB: transB, accumulate: accumulate}
	mr, nr := kern.mr, kern.nr
	rowPanels, colPanels := (m+mr-1)/mr, (n+nr-1)/nr
	if dev == nil {
		g.rect(0, rowPanels, 0, n)
		return
	}
	// Each worker computes its own rectangle of C with its own packed
	// copies of A (and of B where B is packed), so no core waits on cache
	// lines another core wrote. Rows are split when every worker gets a
	// panel (measured faster than splitting columns on every shape tried:
	// square 128 and 512, and the MLP's 64x784x256 and 784x64x256), columns
	// otherwise. A transposed B is packed whole by every worker of a row
	// split: where A has fewer rows than B has columns, columns are split
	// instead, so each worker packs only its own part (the MLP's
	// input-gradient shape, 64x256 times the transpose of 784x256: 2x).
	byRows := rowPanels >= dev.Workers() || colPanels < dev.Workers()
	if transB && m < n && colPanels >= dev.Workers() && rowPanels <= gemmPackBMin {
		byRows = false
	}
	tileCost := kern.nsPerTile(k)
	if tileCost*float64(rowPanels*colPanels) < backend.MinShardCost {
		g.rect(0, rowPanels, 0, n) // too small to split: no closure to allocate
		return
	}
	if !byRows {
		dev.Parallel(colPanels, tileCost*float64(rowPanels), func(lo, hi int) {
			g.rect(0, rowPanels, lo*nr, min(hi*nr, n))
		})
		return
	}
	dev.Parallel(rowPanels, tileCost*float64(colPanels), func(lo, hi int) {
		g.rect(lo, hi, 0, n)
	})
}

// rect computes row panels [i0, i1) of C over columns [c0, c1), one
// worker's share: depth blocks of gemmKCBytes per row, A packed a chunk of
// panels at a time, B a column block at a time.
func (g *gemmOperands[T]) rect(i0, i1, c0, c1 int) {
	mr, nr := g.kern.mr, g.kern.nr
	size := int(unsafe.Sizeof(*new(T)))
	// Depth blocks of equal size, at most gemmKCBytes per row (float32:
	// 1000 = 2 x 500, not 512 + 488; a thin last block would cost a pass
	// over C for little work).
	maxKC := gemmKCBytes / size
	if size == 8 {
		maxKC = gemmKCBytes64 / size
	}
	blocks := (g.k + maxKC - 1) / maxKC
	kc := ((g.k+blocks-1)/blocks + 7) &^ 7
	chunk := max(1, gemmMCBytes/(kc*size*mr))
	ncb := max(nr, gemmNCBytes/(kc*size)/nr*nr)
	// B is read in place, rows n apart, unless it is transposed or very
	// many panels of A reuse it: measured here, packing B cost more than it
	// saved up to 1024x1024 operands and paid about 6% at 2048.
	packB := g.transB || i1-i0 > gemmPackBMin
	bp, bufB := gemmScratch[T](kc * (min(ncb, c1-c0) + nr))
	ap, bufA := gemmScratch[T](min(chunk, i1-i0) * mr * min(kc, g.k))
	tile, bufT := gemmScratch[T](mr * nr)
	for pc := 0; pc < g.k; pc += kc {
		kcur := min(kc, g.k-pc)
		for i := i0; i < i1; i += chunk {
			ie := min(i+chunk, i1)
			blk := gemmBlock[T]{bp: bp, packedB: packB, pc: pc, kcur: kcur, accumulate: pc > 0 || g.accumulate}
			g.packA(ap, &blk, i, ie)
			for jc := c0; jc < c1; jc += ncb {
				blk.jc, blk.ncur = jc, min(ncb, c1-jc)
				colPanels := (blk.ncur + nr - 1) / nr
				switch {
				case packB:
					for j := range colPanels {
						g.packB(bp[j*nr*kcur:(j+1)*nr*kcur], &blk, j)
					}
				case blk.ncur%nr != 0:
					g.packB(bp[:nr*kcur], &blk, colPanels-1)
				}
				g.tiles(ap, tile, &blk, i, ie)
			}
		}
	}
	putGemmScratch(bufB)
	putGemmScratch(bufA)
	putGemmScratch(bufT)
}

// tiles runs the kernel over row panels [i0, i1) (packed in ap from i0)
// and every column panel of the block, A panel by A panel: the micro-kernel
// broadcasts from A, so each A panel stays in L1 while the block's B
// panels stream past it from L2. A tile that overhangs c is computed into
// tile and its real part stored.
func (g *gemmOperands[T]) tiles(ap, tile []T, blk *gemmBlock[T], i0, i1 int) {
	mr, nr, kc := g.kern.mr, g.kern.nr, blk.kcur
	lastCol := (blk.ncur+nr-1)/nr - 1
	for i := i0; i < i1; i++ {
		row := i * mr
		rows := min(mr, g.m-row)
		apanel := ap[(i-i0)*mr*kc : (i-i0+1)*mr*kc]
		for j := 0; j <= lastCol; j++ {
			col := blk.jc + j*nr
			cols := min(nr, blk.jc+blk.ncur-col)
			bpanel, ldb := g.b[blk.pc*g.n+col:], g.n
			switch {
			case blk.packedB:
				bpanel, ldb = blk.bp[j*nr*kc:(j+1)*nr*kc], nr
			case j == lastCol && cols < nr:
				bpanel, ldb = blk.bp[:nr*kc], nr
			}
			cOff := row*g.n + col
			kern := g.kern
			if g.kern.edge != nil && cols <= g.kern.edge.nr {
				kern = *g.kern.edge
			}
			if rows == mr && cols == kern.nr {
				kern.run(kc, apanel, bpanel, ldb, g.c[cOff:], g.n, blk.accumulate)
				continue
			}
			kern.run(kc, apanel, bpanel, ldb, tile, kern.nr, false)
			for r := 0; r < rows; r++ {
				crow := g.c[cOff+r*g.n : cOff+r*g.n+cols]
				src := tile[r*kern.nr : r*kern.nr+cols]
				if blk.accumulate {
					for x, v := range src {
						crow[x] += v
					}
				} else {
					copy(crow, src)
				}
			}
		}
	}
}

// gemmScratchPools keep packing buffers between calls, one pool per power
// of two of the size, so a steady stream of matrix products allocates
// nothing.
var gemmScratchPools [48]sync.Pool

// gemmScratch returns n elements of T, aligned to 64 bytes (a cache line,
// and one AVX-512 vector), and the buffer to give to putGemmScratch.
func gemmScratch[T gemmElem](n int) ([]T, *[]byte) {
	size := n*int(unsafe.Sizeof(*new(T))) + 64
	class := bits.Len(uint(size - 1))
	p, _ := gemmScratchPools[class].Get().(*[]byte)
	if p == nil {
		buf := make([]byte, 1<<class)
		p = &buf
	}
	buf := (*p)[:size]
	off := (64 - int(uintptr(unsafe.Pointer(&buf[0]))%64)) % 64
	return unsafe.Slice((*T)(unsafe.Pointer(&buf[off])), n), p
}

func putGemmScratch(p *[]byte) {
	gemmScratchPools[bits.Len(uint(cap(*p)-1))].Put(p)
}
