package kernels

import (
	"fmt"
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// FlashAttention's kernels for the half types on the tensor cores
// (family attention_tc, PTX target sm_80: mma.sync.m16n8k16 of bf16 or
// f16 pairs into float32 sums). The same three passes as the float32
// flash kernels (flash.go), with the products as warp-wide tile products:
// a block of FlashTCThreads threads, four warps, takes FlashBlock rows
// (queries, or keys for the keys' gradients), sixteen a warp; tiles of
// FlashBlock rows of the other side go through shared memory, copied by
// cp.async into two buffers taken in turn (the next tile's copies run
// while the block computes on the current one; rows 128 wide, whose
// tiles would pass the 48 KB of static shared memory, take them from the
// dynamic array flash_tiles, FlashTCShared bytes of it;
// rows padded by 16 bytes so that the eight rows an ldmatrix phase reads
// hit 32 banks; the operands read by ldmatrix, the values' and the
// depth-major tiles' transposed by it), and each warp's [16 64] tile of
// scores lives in its registers in the accumulator layout, which,
// rounded to the half type in pairs, is the left operand layout of the
// next product (the probabilities times the values). Every sum is in
// float32; each output is rounded once. Rows are FlashTCDims wide.
//
//   - flash_fwd_<bf16|f16>_<dim> (o, lse, q, k, v, tq, tk, nb, blocks,
//     scale2, causal): the online softmax over tiles of keys, as
//     flash_fwd_f32's; the probabilities rounded to the half type for
//     their product with the values (as FlashAttention's), the output
//     divided by the row's sum in float32 and rounded once; lse float32.
//   - flash_bwd_q_<bf16|f16>_<dim> (dq, delta, q, k, v, o, do, lse, dlse,
//     tq, tk, nb, blocks, scale2, scale, causal): δ = Σ dO⊙O − dlse per
//     query (float32, written for the next kernel), then dQ = scale · Σ
//     dS·K over the tiles of keys, dS = P⊙(dO·Vᵀ − δ) rounded to the half
//     type for its product with K.
//   - flash_bwd_kv_<bf16|f16>_<dim> (dk, dv, q, k, v, do, lse, delta, tq,
//     tk, nb, blocks, scale2, scale, causal): per key, over the tiles of
//     queries that attend to it, dV = Σ Pᵀ·dO and dK = scale · Σ dSᵀ·Q,
//     the scores computed transposed (K·Qᵀ), so that a key's sums stay in
//     one warp's registers.
//
// Each has a twin <kind>_<dtype>_<dim>_mask whose parameters end with a
// bool mask (mask, mrep (a divisor), mstep, mrow: batch matrix b's
// element (i, j) at (b/mrep)·mstep + i·mrow + j, as internal/attnmask
// lays it out): a score whose mask element is false counts as masked, as
// a causal mask's; each tile's share of the mask is staged in shared
// memory as bits first (loadMaskBits). A query the mask leaves no key
// gets a NaN output, a log-sum-exp of −∞ and no gradient (δ = 0).
//
// Sums run in a fixed order, so results repeat from run to run.

// FlashTCThreads is the threads of a tensor-core flash block: four warps,
// FlashBlock/4 rows each.
const FlashTCThreads = 128

// flashTCDTypes are the types the tensor-core flash kernels are written
// for.
var flashTCDTypes = []DType{BF16, F16}

// TCTarget is the PTX target of the tensor-core kernels' family.
const TCTarget = "sm_80"

func flashTCKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, dt := range flashTCDTypes {
		for _, dim := range FlashTCDims {
			for _, masked := range []bool{false, true} {
				for _, dropped := range []bool{false, true} {
					out = append(out, flashTCForward(dt, dim, masked, dropped), flashTCBackwardQ(dt, dim, masked, dropped), flashTCBackwardKV(dt, dim, masked, dropped))
				}
			}
		}
	}
	return out
}

// tc is one tensor-core flash kernel being written.
type tc struct {
	*flash
	// dynamic is whether the tiles are the dynamic array flash_tiles
	// (rows wider than 64, whose tiles would pass the 48 KB of static
	// shared memory).
	dynamic bool
	dt      DType
	pitch   int     // halves a shared row: dim + 8
	lane    ptx.Reg // u32
	wrow    ptx.Reg // u32, the warp's first row in the block (16·warp)
	g, t    ptx.Reg // u32, lane/4 and lane%4
	tq, tk  ptx.Reg // u64 parameters: the queries and keys of a matrix
	// masked kernels take a bool mask (attnmask.Layout: mrep, mstep,
	// mrow); maskAt is the current block's matrix's.
	masked                     bool
	mask0, mstep, mrow, maskAt ptx.Reg
	mrep                       divisor
	bits                       ptx.Reg // the tile's mask bits in shared memory (maskBits)
	// dropped kernels drop the weights (the _drop twins): the stream's
	// key, the block its draws begin at, the threshold a draw's 53 bits
	// keep below and the kept weights' factor 1/(1−rate).
	dropped bool // its stream: flash's drop
}

// acc is a warp's accumulator tile: per 8 columns, the four float32
// registers of mma's C layout (rows g and g+8, columns 2t and 2t+1 of
// the eight).
type acc [][4]ptx.Reg

// newTC starts kernel kind of dt and width dim; masked, the twin that
// takes a mask tensor (name suffix _mask); dropped, the twin that drops
// the weights (suffix _drop).
func newTC(kind string, dt DType, dim int, masked, dropped bool) *tc {
	return &tc{flash: newFlash(FlashTCName(kind, dt, dim, masked, dropped), dim), dt: dt, pitch: dim + 8, masked: masked, dropped: dropped, dynamic: dim > 64}
}

// FlashTCName is the name of tensor-core flash kernel kind of dt and
// width dim, the twin taking a mask tensor where masked, the one dropping
// the weights where dropped.
func FlashTCName(kind string, dt DType, dim int, masked, dropped bool) string {
	parts := []string{kind, string(dt), fmt.Sprint(dim)}
	if masked {
		parts = append(parts, "mask")
	}
	if dropped {
		parts = append(parts, "drop")
	}
	return Name(parts...)
}

// flashTCTiles is the shared tiles kernel kind takes: its own, and two
// buffers of the other side's.
var flashTCTiles = map[string]int{"flash_fwd": 5, "flash_bwd_q": 5, "flash_bwd_kv": 4}

// FlashTCShared is the dynamic shared memory, in bytes, the tensor-core
// flash kernel kind ("flash_fwd", "flash_bwd_q", "flash_bwd_kv") of
// width dim is launched with: its tiles, where they are dynamic (rows
// wider than 64); 0 where they are static.
func FlashTCShared(kind string, dim int) int {
	if dim <= 64 {
		return 0
	}
	return flashTCTiles[kind] * (&tc{pitch: dim + 8}).tileBytes()
}

// FlashTCDeclares are the family's module-level declarations: the
// dynamic array of the wide rows' tiles.
var FlashTCDeclares = []string{".extern .shared .align 16 .b8 flash_tiles[]"}

// FlashTCDims are the row widths the tensor-core flash kernels are
// written for.
var FlashTCDims = []int{16, 32, 64, 128}

// tileBytes is a shared tile's size: FlashBlock rows of pitch halves.
func (c *tc) tileBytes() int { return FlashBlock * c.pitch * 2 }

// start declares n shared tiles (and, with scalars, two rows of
// FlashBlock float32) and reads the thread's place; it returns the tiles'
// addresses.
func (c *tc) start(n int, scalars bool) []ptx.Reg {
	k := c.k
	var sh ptx.Reg
	if c.dynamic {
		sh = k.Reg(ptx.U64)
		k.Op("mov.u64 %s, flash_tiles", sh)
	} else {
		sh = k.Shared("tiles", n*c.tileBytes(), 16)
	}
	tiles := []ptx.Reg{sh}
	for i := 1; i < n; i++ {
		r := k.Reg(ptx.U64)
		k.Op("add.s64 %s, %s, %d", r, sh, i*c.tileBytes())
		tiles = append(tiles, r)
	}
	if scalars {
		c.scalars = k.Shared("scalars", 2*FlashBlock*4, 16)
	}
	if c.masked {
		c.bits = k.Shared("maskbits", FlashBlock*FlashBlock/8, 16)
	}
	c.tid, c.lane, c.wrow, c.g, c.t = k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("mov.u32 %s, %%tid.x", c.tid)
	k.Op("and.b32 %s, %s, 31", c.lane, c.tid)
	k.Op("shr.u32 %s, %s, 5", c.wrow, c.tid)
	k.Op("shl.b32 %s, %s, 4", c.wrow, c.wrow)
	k.Op("shr.u32 %s, %s, 2", c.g, c.lane)
	k.Op("and.b32 %s, %s, 3", c.t, c.lane)
	return tiles
}

// halfMatrix is the address of batch matrix bm of a [batch, rows, dim]
// tensor of the half type at base.
func (c *tc) halfMatrix(base, bm, rows ptx.Reg) ptx.Reg {
	k := c.k
	off, a := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("mul.lo.s64 %s, %s, %s", off, bm, rows)
	k.Op("mul.lo.s64 %s, %s, %d", off, off, 2*c.dim)
	k.Op("add.s64 %s, %s, %s", a, base, off)
	return a
}

// pieces runs f for each of the thread's 16-byte pieces of rows [r0,
// r0+FlashBlock) of the [n, dim] half matrix at g and of tile sh
// (tilePieces).
func (c *tc) pieces(sh, g, r0, n ptx.Reg, f func(in, ga, sa ptx.Reg)) {
	tilePieces(c.k, c.tid, FlashTCThreads, c.dim/8, c.pitch/8, sh, g, r0, n, f)
}

// move copies rows [r0, r0+FlashBlock) of the [n, dim] half matrix at
// global address g to or from shared tile sh (moveTile).
func (c *tc) move(load bool, sh, g, r0, n ptx.Reg) {
	moveTile(c.k, c.tid, FlashTCThreads, c.dim/8, c.pitch/8, load, sh, g, r0, n)
}

// copyAsync queues cp.async copies of rows [r0, r0+FlashBlock) of the
// [n, dim] half matrix at g into tile sh (rows at or past n: zeros,
// nothing read; their source clamped to g).
func (c *tc) copyAsync(sh, g, r0, n ptx.Reg) {
	k := c.k
	c.pieces(sh, g, r0, n, func(in, ga, sa ptx.Reg) {
		size := k.Reg(ptx.U32)
		k.Op("selp.b64 %s, %s, %s, %s", ga, ga, g, in)
		k.Op("selp.u32 %s, 16, 0, %s", size, in)
		k.Op("cp.async.cg.shared.global [%s], [%s], 16, %s", sa, ga, size)
	})
}

// pipeSrc is a matrix whose tiles a pipelined loop copies: its global
// address and rows.
type pipeSrc struct{ g, n ptx.Reg }

// pipelined runs body for each tile of FlashBlock rows from from up to
// end (u64), as tiles does, with each source's tile in shared memory: the
// tiles of srcs go to len(srcs) consecutive tiles from first, and the
// next tile's to the len(srcs) after them, copied by cp.async while the
// block computes on the current ones (two buffers, taken in turn). body
// gets the tile's first row and the current buffer's offset from the
// first (u64, 0 or the set's size); pre, where not nil, runs before the
// barrier that opens each tile (the previous tile's readers are done).
func (c *tc) pipelined(from, end, first ptx.Reg, srcs []pipeSrc, pre, body func(t0, off ptx.Reg)) {
	k := c.k
	set := len(srcs) * c.tileBytes()
	issue := func(t0, off ptx.Reg) {
		for i, s := range srcs {
			sh := k.Reg(ptx.U64)
			k.Op("add.s64 %s, %s, %s", sh, first, off)
			k.Op("add.s64 %s, %s, %d", sh, sh, i*c.tileBytes())
			c.copyAsync(sh, s.g, t0, s.n)
		}
	}
	off, more := k.Reg(ptx.U64), k.Reg(ptx.Pred)
	k.Op("mov.u64 %s, 0", off)
	step := k.Reg(ptx.U64)
	k.Op("mov.u64 %s, %d", step, FlashBlock)
	none := k.Label("tc_pipe_empty")
	k.Op("setp.ge.u64 %s, %s, %s", more, from, end)
	k.Op("@%s bra %s", more, none)
	issue(from, off)
	k.Place(none)
	k.Op("cp.async.commit_group")
	k.Loop(from, end, step, func(t0 ptx.Reg) {
		next, other := k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("add.s64 %s, %s, %d", next, t0, FlashBlock)
		k.Op("xor.b64 %s, %s, %d", other, off, set)
		last := k.Label("tc_pipe_last")
		k.Op("setp.ge.u64 %s, %s, %s", more, next, end)
		k.Op("@%s bra %s", more, last)
		issue(next, other)
		k.Place(last)
		k.Op("cp.async.commit_group")
		k.Op("cp.async.wait_group 1") // the current tile's copies are done
		if pre != nil {
			pre(t0, off)
		}
		c.sync()
		body(t0, off)
		c.sync() // its readers are done before the next tile's copies go there
		k.Op("mov.u64 %s, %s", off, other)
	})
	k.Op("cp.async.wait_all")
}

// shifted is s read from the buffer off bytes on (a pipelined loop's
// current one).
func (c *tc) shifted(s bSource, off ptx.Reg) bSource {
	b := c.k.Reg(ptx.U64)
	c.k.Op("add.s64 %s, %s, %s", b, s.base, off)
	return bSource{base: b, kRows: s.kRows}
}

// at is the shared address of half (row, col) of tile sh, row and col u32.
func (c *tc) at(sh, row, col ptx.Reg) ptx.Reg {
	k := c.k
	e, a := k.Reg(ptx.U32), k.Reg(ptx.U64)
	k.Op("mad.lo.u32 %s, %s, %d, %s", e, row, c.pitch, col)
	k.Op("mul.wide.u32 %s, %s, 2", a, e)
	k.Op("add.s64 %s, %s, %s", a, a, sh)
	return a
}

// ownBase is the address of the thread's first element of its warp's
// rows in tile sh: row wrow+g, column 2t (the A and C layouts' element
// 0).
func (c *tc) ownBase(sh ptx.Reg) ptx.Reg {
	row, col := c.k.Reg(ptx.U32), c.k.Reg(ptx.U32)
	c.k.Op("add.u32 %s, %s, %s", row, c.wrow, c.g)
	c.k.Op("shl.b32 %s, %s, 1", col, c.t)
	return c.at(sh, row, col)
}

// ldmatrixAt is the address lane l gives ldmatrix.x4 in tile sh: row r0
// + 8·a + l%8, column 8·b, where (a, b) is ((l/8)%2, l/16) with
// rowsFirst, else (l/16, (l/8)%2): the four 8x8 matrices so named are
// A's quarters in mma's order (rows first), or two B fragments, each's
// two depth halves in turn.
func (c *tc) ldmatrixAt(sh, r0 ptx.Reg, rowsFirst bool) ptx.Reg {
	k := c.k
	half, other, row, col := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("shr.u32 %s, %s, 3", half, c.lane)
	k.Op("and.b32 %s, %s, 1", half, half)
	k.Op("shr.u32 %s, %s, 4", other, c.lane)
	if !rowsFirst {
		half, other = other, half
	}
	k.Op("and.b32 %s, %s, 7", row, c.lane)
	k.Op("mad.lo.u32 %s, %s, 8, %s", row, half, row)
	k.Op("add.u32 %s, %s, %s", row, row, r0)
	k.Op("shl.b32 %s, %s, 3", col, other)
	return c.at(sh, row, col)
}

// ldmatrix loads four registers (.trans: transposed 8x8 matrices) at
// the lane's address plus off bytes.
func (c *tc) ldmatrix(addr ptx.Reg, off int, trans bool) [4]ptx.Reg {
	k := c.k
	d := [4]ptx.Reg{k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)}
	t := ""
	if trans {
		t = ".trans"
	}
	k.Op("ldmatrix.sync.aligned.m8n8.x4%s.shared.b16 {%s, %s, %s, %s}, [%s+%d]", t, d[0], d[1], d[2], d[3], addr, off)
	return d
}

// aFrags reads the warp's 16 rows of tile sh as mma's left operand, a
// fragment a 16 columns (dim/16 of them), an ldmatrix each.
func (c *tc) aFrags(sh ptx.Reg) [][4]ptx.Reg {
	base := c.ldmatrixAt(sh, c.wrow, true)
	out := make([][4]ptx.Reg, c.dim/16)
	for kk := range out {
		out[kk] = c.ldmatrix(base, 32*kk, false)
	}
	return out
}

// bSource is a tile read as mma's right operand B, through ldmatrix: its
// rows are B's columns (B = Tᵀ: the keys of Q·Kᵀ), or, kRows, B's rows
// (B = T: the keys of P·V), read transposed.
type bSource struct {
	base  ptx.Reg // the lane's ldmatrix address for depth 0, columns 0 and 8
	kRows bool
}

// nRows and kRows prepare the two ways a tile is a right operand.
func (c *tc) nRows(sh ptx.Reg) bSource {
	zero := c.k.Reg(ptx.U32)
	c.k.Op("mov.u32 %s, 0", zero)
	return bSource{base: c.ldmatrixAt(sh, zero, false)}
}

func (c *tc) kRows(sh ptx.Reg) bSource {
	zero := c.k.Reg(ptx.U32)
	c.k.Op("mov.u32 %s, 0", zero)
	return bSource{base: c.ldmatrixAt(sh, zero, true), kRows: true}
}

// bPair reads the right operand's fragments of columns [8nt, 8nt+16)
// (two column-tiles) at depth [16kk, 16kk+16): one ldmatrix.
func (c *tc) bPair(s bSource, kk, nt int) (b0, b1 [2]ptx.Reg) {
	row := 2 * c.pitch // bytes a row
	off := 8*nt*row + 32*kk
	if s.kRows {
		off = 16*kk*row + 16*nt
	}
	d := c.ldmatrix(s.base, off, s.kRows)
	return [2]ptx.Reg{d[0], d[1]}, [2]ptx.Reg{d[2], d[3]}
}

// zeroAcc is a warp's [16, 8n] float32 accumulator, zeros.
func (c *tc) zeroAcc(n int) acc {
	out := make(acc, n)
	for i := range out {
		for j := range out[i] {
			out[i][j] = c.k.Reg(ptx.F32)
			c.k.Op("mov.f32 %s, 0f00000000", out[i][j])
		}
	}
	return out
}

// product adds a·B to d: a the left fragments (depth 16 each), d a
// column-tile of 8 each (an even number of them).
func (c *tc) product(d acc, a [][4]ptx.Reg, s bSource) {
	name := string(c.dt)
	mma := func(x [4]ptx.Reg, y [4]ptx.Reg, b [2]ptx.Reg) {
		c.k.Op("mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32 {%s, %s, %s, %s}, {%s, %s, %s, %s}, {%s, %s}, {%s, %s, %s, %s}",
			name, name, x[0], x[1], x[2], x[3], y[0], y[1], y[2], y[3], b[0], b[1], x[0], x[1], x[2], x[3])
	}
	for nt := 0; nt < len(d); nt += 2 {
		for kk := range a {
			b0, b1 := c.bPair(s, kk, nt)
			mma(d[nt], a[kk], b0)
			mma(d[nt+1], a[kk], b1)
		}
	}
}

// pack is hi and lo rounded to the half type in one register (lo low).
func (c *tc) pack(hi, lo ptx.Reg) ptx.Reg {
	r := c.k.Reg(ptx.U32)
	c.k.Op("cvt.rn.%sx2.f32 %s, %s, %s", string(c.dt), r, hi, lo)
	return r
}

// asLeft rounds an accumulator tile of 16·n columns to the half type as
// mma's left fragments (depth 16 each): two accumulator column-tiles make
// one fragment.
func (c *tc) asLeft(x acc) [][4]ptx.Reg {
	out := make([][4]ptx.Reg, len(x)/2)
	for kk := range out {
		l, r := x[2*kk], x[2*kk+1]
		out[kk] = [4]ptx.Reg{c.pack(l[1], l[0]), c.pack(l[3], l[2]), c.pack(r[1], r[0]), c.pack(r[3], r[2])}
	}
	return out
}

// each runs f for every element of x: its register, its row half (0: row
// g, 1: g+8) and its column in the tile (u32 offset from 8nt+2t: nt·8 + i&1).
func each(x acc, f func(r ptx.Reg, half, col int)) {
	for nt := range x {
		for i, r := range x[nt] {
			f(r, i>>1, 8*nt+(i&1))
		}
	}
}

// scaled multiplies every element of x by s.
func (c *tc) scaledAcc(x acc, s ptx.Reg) {
	each(x, func(r ptx.Reg, _, _ int) { c.k.Op("mul.rn.f32 %s, %s, %s", r, r, s) })
}

// stage writes the warp's rows of x (dim columns) to tile sh rounded to
// the half type, for move to store.
func (c *tc) stage(sh ptx.Reg, x acc) {
	base := c.ownBase(sh)
	for nt := range x {
		for h := range 2 {
			c.k.Op("st.shared.b32 [%s+%d], %s", base, 16*nt+h*16*c.pitch, c.pack(x[nt][2*h+1], x[nt][2*h]))
		}
	}
}

// positions are a thread's two rows (u32: r0 + wrow + g and + 8) from
// block start r0 (u64).
func (c *tc) positions(r0 ptx.Reg) [2]ptx.Reg {
	k := c.k
	var p [2]ptx.Reg
	base := k.Reg(ptx.U32)
	k.Op("cvt.u32.u64 %s, %s", base, r0)
	k.Op("add.u32 %s, %s, %s", base, base, c.wrow)
	k.Op("add.u32 %s, %s, %s", base, base, c.g)
	p[0], p[1] = base, k.Reg(ptx.U32)
	k.Op("add.u32 %s, %s, 8", p[1], base)
	return p
}

// mask sets each element of x to v where its column (c0 (u64) + its
// column in the tile) is at or past limit (u64), or, where causal is
// set, on the wrong side of its row (rows: positions; later columns than
// the row where rowsQuery, earlier where not), or, in a masked kernel,
// where the tile's mask bits (maskBits) drop it; a tile that needs none
// (decided for the block: need) skips it.
func (c *tc) mask(x acc, rows [2]ptx.Reg, c0, limit ptx.Reg, causal ptx.Reg, rowsQuery bool, need ptx.Reg, v string) {
	k := c.k
	skip := k.Label("tc_masked")
	var dropped func(half, col int) ptx.Reg
	if c.masked { // a mask tensor concerns every tile
		dropped = c.maskBitsOf(rowsQuery)
	} else {
		k.Op("@!%s bra %s", need, skip)
	}
	cb, lim := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("cvt.u32.u64 %s, %s", cb, c0)
	k.Op("mad.lo.u32 %s, %s, 2, %s", cb, c.t, cb) // the thread's first column: c0 + 2t
	k.Op("cvt.u32.u64 %s, %s", lim, limit)
	each(x, func(r ptx.Reg, half, col int) {
		cc, out, wrong := k.Reg(ptx.U32), k.Reg(ptx.Pred), k.Reg(ptx.Pred)
		k.Op("add.u32 %s, %s, %d", cc, cb, col)
		k.Op("setp.ge.u32 %s, %s, %s", out, cc, lim)
		if rowsQuery {
			k.Op("setp.gt.u32 %s, %s, %s", wrong, cc, rows[half])
		} else {
			k.Op("setp.lt.u32 %s, %s, %s", wrong, cc, rows[half])
		}
		k.Op("and.pred %s, %s, %s", wrong, wrong, causal)
		k.Op("or.pred %s, %s, %s", out, out, wrong)
		if dropped != nil {
			k.Op("or.pred %s, %s, %s", out, out, dropped(half, col))
		}
		k.Op("@%s mov.f32 %s, %s", out, r, v)
	})
	k.Place(skip)
}

// Masked kernels stage each tile's share of the mask tensor as bits in
// shared memory (maskbits: FlashBlock queries, each a 64-bit word of
// FlashBlock keys, bit j for key j, 1 to keep), read by the warps'
// coalesced byte loads and vote.sync.ballot before the tile's barrier
// (loadMaskBits), then tested a score at a time (maskBitsOf).

// loadMaskBits stages the mask of queries q0... and keys k0... (u64;
// FlashBlock each; outside [tq, tk] kept, as the other masks decide
// there): a warp's 32 lanes read 32 neighbouring keys of one query, and
// its first lane stores their ballot.
func (c *tc) loadMaskBits(q0, k0 ptx.Reg) {
	k := c.k
	// Thread tid reads key tid%64 of queries tid/64, +2, +4, ...: one
	// address a step on, by two rows of the mask.
	first, kin := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
	k.Op("setp.eq.u32 %s, %s, 0", first, c.lane)
	qr, kc := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("shr.u32 %s, %s, 6", qr, c.tid)
	k.Op("and.b32 %s, %s, %d", kc, c.tid, FlashBlock-1)
	q, key, addr, step := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("cvt.u64.u32 %s, %s", q, qr)
	k.Op("add.s64 %s, %s, %s", q, q, q0)
	k.Op("cvt.u64.u32 %s, %s", key, kc)
	k.Op("add.s64 %s, %s, %s", key, key, k0)
	k.Op("setp.lt.u64 %s, %s, %s", kin, key, c.tk)
	k.Op("mad.lo.s64 %s, %s, %s, %s", addr, q, c.mrow, key)
	k.Op("add.s64 %s, %s, %s", addr, addr, c.maskAt)
	k.Op("shl.b64 %s, %s, 1", step, c.mrow)
	// The word of bits (query, key/32) is 4 bytes at byte (query·64 +
	// key)/8 rounded down to 4; a step on is 16 bytes on.
	at, sa := k.Reg(ptx.U32), k.Reg(ptx.U64)
	k.Op("shr.u32 %s, %s, 3", at, c.tid)
	k.Op("and.b32 %s, %s, %d", at, at, ^3)
	k.Op("cvt.u64.u32 %s, %s", sa, at)
	k.Op("add.s64 %s, %s, %s", sa, sa, c.bits)
	for s := range FlashBlock * FlashBlock / FlashTCThreads {
		in, p := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
		keep, word := k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("setp.lt.u64 %s, %s, %s", in, q, c.tq)
		k.Op("and.pred %s, %s, %s", in, in, kin)
		k.Op("mov.u32 %s, 1", keep)
		k.Op("@%s ld.global.u8 %s, [%s]", in, keep, addr)
		k.Op("setp.ne.u32 %s, %s, 0", p, keep)
		k.Op("vote.sync.ballot.b32 %s, %s, 0xffffffff", word, p)
		k.Op("@%s st.shared.b32 [%s+%d], %s", first, sa, 16*s, word)
		k.Op("add.s64 %s, %s, 2", q, q)
		k.Op("add.s64 %s, %s, %s", addr, addr, step)
	}
}

// maskBitsOf reads the thread's mask bits for a tile and returns the
// test of an element (its row half and column in the tile, as each
// gives them) against them: dropped where its bit is 0. rowsQuery: rows
// are queries (the bits of row wrow+g(+8), shifted by the thread's first
// column 2t), else keys (the bits of each of the thread's sixteen query
// columns, tested at bit wrow%32 + g (+8)).
func (c *tc) maskBitsOf(rowsQuery bool) func(half, col int) ptx.Reg {
	k := c.k
	drop := func(word ptx.Reg, typ string, bit ptx.Reg) ptx.Reg {
		t, d := k.Reg(word.Type()), k.Reg(ptx.Pred)
		k.Op("and.b%s %s, %s, %s", typ, t, word, bit)
		k.Op("setp.eq.u%s %s, %s, 0", typ, d, t)
		return d
	}
	if rowsQuery {
		var words [2]ptx.Reg
		shift := k.Reg(ptx.U32)
		k.Op("shl.b32 %s, %s, 1", shift, c.t)
		for h := range 2 {
			row, w := k.Reg(ptx.U32), k.Reg(ptx.U64)
			k.Op("add.u32 %s, %s, %s", row, c.wrow, c.g)
			k.Op("add.u32 %s, %s, %d", row, row, 8*h)
			k.Op("ld.shared.b64 %s, [%s]", w, c.rowAddr(c.bits, 2, row))
			k.Op("shr.b64 %s, %s, %s", w, w, shift)
			words[h] = w
		}
		return func(half, col int) ptx.Reg {
			bit := k.Reg(ptx.U64)
			k.Op("mov.b64 %s, %d", bit, uint64(1)<<col)
			return drop(words[half], "64", bit)
		}
	}
	// Rows are keys: a key's bit sits in the word of its query column.
	var bits [2]ptx.Reg
	pos, half := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("and.b32 %s, %s, 31", pos, c.wrow)
	k.Op("add.u32 %s, %s, %s", pos, pos, c.g)
	for h := range 2 {
		bits[h] = k.Reg(ptx.U32)
		k.Op("shl.b32 %s, 1, %s", bits[h], pos)
		k.Op("add.u32 %s, %s, 8", pos, pos)
	}
	k.Op("shr.u32 %s, %s, 5", half, c.wrow) // the keys' half of each query's 64 bits
	// Query 2t + col's word is at (4t + half)·4 + 8·col.
	base := k.Reg(ptx.U32)
	k.Op("mad.lo.u32 %s, %s, 4, %s", base, c.t, half)
	at := c.rowAddr(c.bits, 1, base)
	cols := map[int]ptx.Reg{}
	return func(h, col int) ptx.Reg {
		w, ok := cols[col]
		if !ok {
			w = k.Reg(ptx.U32)
			k.Op("ld.shared.b32 %s, [%s+%d]", w, at, 8*col)
			cols[col] = w
		}
		return drop(w, "32", bits[h])
	}
}

// maskOfKeys is a pipelined loop's pre for the tiles of keys of the
// block of queries from q0: the tile's mask bits, in a masked kernel
// (nil otherwise).
func (c *tc) maskOfKeys(q0 ptx.Reg) func(j0, off ptx.Reg) {
	if !c.masked {
		return nil
	}
	return func(j0, _ ptx.Reg) { c.loadMaskBits(q0, j0) }
}

// blockMask sets maskAt to batch matrix bm's mask, for a masked kernel.
func (c *tc) blockMask(bm ptx.Reg) {
	if !c.masked {
		return
	}
	c.maskAt = c.k.Reg(ptx.U64)
	mb, _ := divmod(c.k, bm, c.mrep)
	c.k.Op("mad.lo.s64 %s, %s, %s, %s", c.maskAt, mb, c.mstep, c.mask0)
}

// causalPred is causal (u64) != 0 as a predicate.
func (c *tc) causalPred(causal ptx.Reg) ptx.Reg {
	p := c.k.Reg(ptx.Pred)
	c.k.Op("setp.ne.u64 %s, %s, 0", p, causal)
	return p
}

// needMask decides for a block whether a tile needs masking: its columns
// [c0, c0+FlashBlock) reach past limit, or, where causal is set, some
// column lies on the wrong side of some row of [r0, r0+FlashBlock).
func (c *tc) needMask(c0, limit, r0, causal ptx.Reg, rowsQuery bool) ptx.Reg {
	k := c.k
	end, need, wrong := k.Reg(ptx.U64), k.Reg(ptx.Pred), k.Reg(ptx.Pred)
	k.Op("add.s64 %s, %s, %d", end, c0, FlashBlock)
	k.Op("setp.gt.u64 %s, %s, %s", need, end, limit)
	edge := k.Reg(ptx.U64)
	if rowsQuery { // a column past the first row: c0 + 63 > r0
		k.Op("add.s64 %s, %s, %d", edge, c0, FlashBlock-1)
		k.Op("setp.gt.u64 %s, %s, %s", wrong, edge, r0)
	} else { // a column before the last row: c0 < r0 + 63
		k.Op("add.s64 %s, %s, %d", edge, r0, FlashBlock-1)
		k.Op("setp.lt.u64 %s, %s, %s", wrong, c0, edge)
	}
	k.Op("and.pred %s, %s, %s", wrong, wrong, causal)
	k.Op("or.pred %s, %s, %s", need, need, wrong)
	return need
}

// quadSum adds x over the four lanes of its quad (the lanes holding one
// row), in place.
func (c *tc) quadSum(x ptx.Reg) {
	for off := 1; off < 4; off *= 2 {
		c.k.Op("add.rn.f32 %s, %s, %s", x, x, shuffleXor(c.k, ptx.F32, x, off))
	}
}

// rowScalar loads float32 vector element (bm·tq + row) (u32 row, 0 where
// row >= tq), times mul unless 0.
func (c *tc) rowScalar(g, bm, tq, row ptx.Reg, mul float64) ptx.Reg {
	k := c.k
	v, in, r64 := k.Reg(ptx.F32), k.Reg(ptx.Pred), k.Reg(ptx.U64)
	k.Op("mov.f32 %s, 0f00000000", v)
	k.Op("cvt.u64.u32 %s, %s", r64, row)
	k.Op("setp.lt.u64 %s, %s, %s", in, r64, tq)
	k.Op("mad.lo.s64 %s, %s, %s, %s", r64, bm, tq, r64)
	k.Op("@%s ld.global.f32 %s, [%s]", in, v, k.Addr(g, r64, 4))
	if mul != 0 {
		k.Op("mul.rn.f32 %s, %s, %s", v, v, ptx.Imm(ptx.F32, mul))
	}
	return v
}

// storeRowScalar stores v at element (bm·tq + row) of the float32 vector
// at g, from lane t = 0 of the row's quad, where row < tq.
func (c *tc) storeRowScalar(g, bm, tq, row, v ptx.Reg) {
	k := c.k
	in, first, r64 := k.Reg(ptx.Pred), k.Reg(ptx.Pred), k.Reg(ptx.U64)
	k.Op("cvt.u64.u32 %s, %s", r64, row)
	k.Op("setp.lt.u64 %s, %s, %s", in, r64, tq)
	k.Op("setp.eq.u32 %s, %s, 0", first, c.t)
	k.Op("and.pred %s, %s, %s", first, first, in)
	k.Op("mad.lo.s64 %s, %s, %s, %s", r64, bm, tq, r64)
	k.Op("@%s st.global.f32 [%s], %s", first, k.Addr(g, r64, 4), v)
}

// params declares the tensor-core kernels' trailing parameters after
// their pointers: tq, tk, nb, blocks, scale2[, scale], causal, and a
// masked kernel's mask (bools), mrep (a divisor), mstep and mrow.
func (c *tc) params(withScale bool) (tq, tk ptx.Reg, nb divisor, blocks, scale2, scale, causal ptx.Reg) {
	k := c.k
	tq, tk, nb, blocks = k.Param("tq", ptx.U64), k.Param("tk", ptx.U64), paramDivisor(k, "nb"), k.Param("blocks", ptx.U64)
	scale2 = k.Param("scale2", ptx.F32)
	if withScale {
		scale = k.Param("scale", ptx.F32)
	}
	causal = k.Param("causal", ptx.U64)
	if c.masked {
		c.mask0, c.mrep = k.ParamPtr("mask"), paramDivisor(k, "mrep")
		c.mstep, c.mrow = k.Param("mstep", ptx.U64), k.Param("mrow", ptx.U64)
	}
	if c.dropped {
		c.drop = dropParams(k)
	}
	c.tq, c.tk = tq, tk
	return
}

// dropBits draws the keep bits of the thread's 32 elements of a [16
// FlashBlock] tile of weights of batch matrix bm (u64), bit 4nt+i for
// element i of column group nt (acc's order, each's): rows are the
// thread's two (positions), columns c0 (u64) + 2t + 8nt + (i&1); where
// rowsQuery the rows are queries, else keys; each weight's bit as
// dropStream says. Where the rows are queries a
// thread's two neighbouring columns are neighbouring elements, one block
// for both where the first is even (every row of an even tk): a loop of
// 16 pairs; else a loop of 32 draws.
func (c *tc) dropBits(bm ptx.Reg, rows [2]ptx.Reg, c0 ptx.Reg, rowsQuery bool) ptx.Reg {
	k := c.k
	bits := k.Reg(ptx.U32)
	k.Op("mov.u32 %s, 0", bits)
	from, n, one := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("mov.u64 %s, 0", from)
	k.Op("mov.u64 %s, 1", one)
	rowBase := k.Reg(ptx.U64) // bm·tq, the matrix's first query
	k.Op("mul.lo.s64 %s, %s, %s", rowBase, bm, c.tq)
	c0w := k.Reg(ptx.U32)
	k.Op("cvt.u32.u64 %s, %s", c0w, c0)
	// element is e for the row rows[sel] and column c0 + 2t + off (u32).
	element := func(sel ptx.Reg, off ptx.Reg) ptx.Reg {
		r, col, t := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U64)
		k.Op("selp.b32 %s, %s, %s, %s", r, rows[1], rows[0], sel)
		k.Op("mad.lo.u32 %s, %s, 2, %s", col, c.t, off)
		k.Op("add.u32 %s, %s, %s", col, col, c0w)
		qi, kj := r, col
		if !rowsQuery {
			qi, kj = col, r
		}
		e := k.Reg(ptx.U64)
		k.Op("cvt.u64.u32 %s, %s", t, qi)
		k.Op("add.s64 %s, %s, %s", e, rowBase, t)
		k.Op("mul.lo.s64 %s, %s, %s", e, e, c.tk)
		k.Op("cvt.u64.u32 %s, %s", t, kj)
		k.Op("add.s64 %s, %s, %s", e, e, t)
		return e
	}
	keeps := func(hi, lo ptx.Reg) ptx.Reg { return c.drop.keeps(k, hi, lo) }
	// set ors bit pos (u32) into bits where keep.
	set := func(keep, pos ptx.Reg) {
		bit := k.Reg(ptx.U32)
		k.Op("selp.u32 %s, 1, 0, %s", bit, keep)
		k.Op("shl.b32 %s, %s, %s", bit, bit, pos)
		k.Op("or.b32 %s, %s, %s", bits, bits, bit)
	}
	draw := func(e ptx.Reg) [4]ptx.Reg { return c.drop.draw(k, e) }
	if !rowsQuery {
		k.Op("mov.u64 %s, %d", n, FlashBlock/2)
		k.Loop(from, n, one, func(idx ptx.Reg) {
			i32, x, off, half := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.Pred)
			k.Op("cvt.u32.u64 %s, %s", i32, idx)
			// Element idx: row rows[(idx>>1)&1], column offset 8(idx>>2) + (idx&1).
			k.Op("and.b32 %s, %s, 2", x, i32)
			k.Op("setp.ne.u32 %s, %s, 0", half, x)
			k.Op("shr.u32 %s, %s, 2", off, i32)
			k.Op("shl.b32 %s, %s, 3", off, off)
			k.Op("and.b32 %s, %s, 1", x, i32)
			k.Op("add.u32 %s, %s, %s", off, off, x)
			hi, lo := c.drop.words(k, element(half, off))
			set(keeps(hi, lo), i32)
		})
		return bits
	}
	k.Op("mov.u64 %s, %d", n, FlashBlock/4)
	k.Loop(from, n, one, func(pair ptx.Reg) {
		p32, x, off, half := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.Pred)
		k.Op("cvt.u32.u64 %s, %s", p32, pair)
		// Pair p: elements 2p and 2p+1, row rows[p&1], columns 8(p>>1) and + 1.
		k.Op("and.b32 %s, %s, 1", x, p32)
		k.Op("setp.ne.u32 %s, %s, 0", half, x)
		k.Op("shr.u32 %s, %s, 1", off, p32)
		k.Op("shl.b32 %s, %s, 3", off, off)
		e := element(half, off)
		w := draw(e)
		odd, t := k.Reg(ptx.Pred), k.Reg(ptx.U64)
		k.Op("and.b64 %s, %s, 1", t, e)
		k.Op("setp.ne.u64 %s, %s, 0", odd, t)
		// Even: words 0-1 and 2-3 of one block; odd: 2-3, then the next
		// block's 0-1.
		hi0, lo0, hi1, lo1 := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("selp.b32 %s, %s, %s, %s", hi0, w[2], w[0], odd)
		k.Op("selp.b32 %s, %s, %s, %s", lo0, w[3], w[1], odd)
		k.Op("mov.b32 %s, %s", hi1, w[2])
		k.Op("mov.b32 %s, %s", lo1, w[3])
		even := k.Label("drop_even")
		k.Op("@!%s bra %s", odd, even)
		next := k.Reg(ptx.U64)
		k.Op("add.s64 %s, %s, 1", next, e)
		w2 := draw(next)
		k.Op("mov.b32 %s, %s", hi1, w2[0])
		k.Op("mov.b32 %s, %s", lo1, w2[1])
		k.Place(even)
		pos := k.Reg(ptx.U32)
		k.Op("shl.b32 %s, %s, 1", pos, p32)
		set(keeps(hi0, lo0), pos)
		k.Op("add.u32 %s, %s, 1", pos, pos)
		set(keeps(hi1, lo1), pos)
	})
	return bits
}

// dropApply multiplies each element of x by 1/(1−rate) where its bit of
// bits (dropBits) keeps it, and sets it to 0 where not.
func (c *tc) dropApply(x acc, bits ptx.Reg) {
	k := c.k
	idx := 0
	each(x, func(r ptx.Reg, _, _ int) {
		t, keep := k.Reg(ptx.U32), k.Reg(ptx.Pred)
		k.Op("and.b32 %s, %s, %d", t, bits, uint32(1)<<idx)
		k.Op("setp.ne.u32 %s, %s, 0", keep, t)
		k.Op("mul.rn.f32 %s, %s, %s", r, r, c.drop.rscale)
		k.Op("@!%s mov.f32 %s, 0f00000000", keep, r)
		idx++
	})
}

func flashTCForward(dt DType, dim int, masked, dropped bool) *ptx.Kernel {
	c := newTC("flash_fwd", dt, dim, masked, dropped)
	k := c.k
	o, lse, q, kk, v := k.ParamPtr("o"), k.ParamPtr("lse"), k.ParamPtr("q"), k.ParamPtr("k"), k.ParamPtr("v")
	tq, tk, nb, blocks, scale2, _, causal := c.params(false)
	tiles := c.start(flashTCTiles["flash_fwd"], false) // Q (and the output staged), then two sets of K and V
	kt, vt := tiles[1], tiles[2]
	kSrc, vSrc := c.nRows(kt), c.kRows(vt)
	causalP := c.causalPred(causal)
	ninf := ptx.Imm(ptx.F32, math.Inf(-1))
	c.blocks(blocks, nb, func(bm, q0 ptx.Reg) {
		c.blockMask(bm)
		qm, km, vm, om := c.halfMatrix(q, bm, tq), c.halfMatrix(kk, bm, tk), c.halfMatrix(v, bm, tk), c.halfMatrix(o, bm, tq)
		c.move(true, tiles[0], qm, q0, tq)
		c.sync()
		qf := c.aFrags(tiles[0])
		rows := c.positions(q0)
		var m, l [2]ptx.Reg
		for h := range 2 {
			m[h], l[h] = k.Reg(ptx.F32), k.Reg(ptx.F32)
			k.Op("mov.f32 %s, %s", m[h], ninf)
			k.Op("mov.f32 %s, 0f00000000", l[h])
		}
		out := c.zeroAcc(dim / 8)
		zero := k.Reg(ptx.U64)
		k.Op("mov.u64 %s, 0", zero)
		c.pipelined(zero, c.causalEnd(causal, q0, tk), kt, []pipeSrc{{km, tk}, {vm, tk}}, c.maskOfKeys(q0), func(j0, off ptx.Reg) {
			s := c.zeroAcc(FlashBlock / 8)
			c.product(s, qf, c.shifted(kSrc, off))
			c.scaledAcc(s, scale2)
			c.mask(s, rows, j0, tk, causalP, true, c.needMask(j0, tk, q0, causalP, true), ninf)
			// The online softmax, per row: the tile's maximum over the
			// quad, the sums so far rescaled to the new maximum.
			var corr [2]ptx.Reg
			for h := range 2 {
				mx := k.Reg(ptx.F32)
				k.Op("mov.f32 %s, %s", mx, m[h])
				for nt := range s {
					k.Op("max.f32 %s, %s, %s", mx, mx, s[nt][2*h])
					k.Op("max.f32 %s, %s, %s", mx, mx, s[nt][2*h+1])
				}
				for off := 1; off < 4; off *= 2 {
					k.Op("max.f32 %s, %s, %s", mx, mx, shuffleXor(k, ptx.F32, mx, off))
				}
				// A row with no key yet keeps −∞: subtract 0 instead.
				use, none := k.Reg(ptx.F32), k.Reg(ptx.Pred)
				k.Op("setp.eq.f32 %s, %s, %s", none, mx, ninf)
				k.Op("selp.f32 %s, 0f00000000, %s, %s", use, mx, none)
				d := k.Reg(ptx.F32)
				k.Op("sub.rn.f32 %s, %s, %s", d, m[h], use)
				corr[h] = c.ex2(d)
				k.Op("mov.f32 %s, %s", m[h], mx)
				k.Op("mul.rn.f32 %s, %s, %s", l[h], l[h], corr[h])
				for nt := range s {
					for i := 2 * h; i < 2*h+2; i++ {
						k.Op("sub.rn.f32 %s, %s, %s", s[nt][i], s[nt][i], use)
						k.Op("ex2.approx.ftz.f32 %s, %s", s[nt][i], s[nt][i])
						k.Op("add.rn.f32 %s, %s, %s", l[h], l[h], s[nt][i])
					}
				}
			}
			each(out, func(r ptx.Reg, half, _ int) { k.Op("mul.rn.f32 %s, %s, %s", r, r, corr[half]) })
			if c.dropped { // the sums keep every weight; the product the kept ones
				c.dropApply(s, c.dropBits(bm, rows, j0, true))
			}
			c.product(out, c.asLeft(s), c.shifted(vSrc, off))
		})
		for h := range 2 {
			c.quadSum(l[h])
		}
		each(out, func(r ptx.Reg, half, _ int) { k.Op("div.rn.f32 %s, %s, %s", r, r, l[half]) })
		for h := range 2 { // lse = (m + log2 l)·ln 2
			lg := k.Reg(ptx.F32)
			k.Op("lg2.approx.f32 %s, %s", lg, l[h])
			k.Op("add.rn.f32 %s, %s, %s", lg, lg, m[h])
			k.Op("mul.rn.f32 %s, %s, %s", lg, lg, ptx.Imm(ptx.F32, math.Ln2))
			c.storeRowScalar(lse, bm, tq, rows[h], lg)
		}
		c.stage(tiles[0], out) // the Q tile is free: the loop's barriers
		c.sync()
		c.move(false, tiles[0], om, q0, tq)
		c.sync()
	})
	return k
}

// rowDot is Σ x⊙y over the thread's rows of two staged tiles (its
// quad's share: columns 2t, 2t+1 of every 8), summed over the quad: a
// value per row half.
func (c *tc) rowDot(x, y ptx.Reg) [2]ptx.Reg {
	k := c.k
	bx, by := c.ownBase(x), c.ownBase(y)
	var out [2]ptx.Reg
	for h := range 2 {
		out[h] = k.Reg(ptx.F32)
		k.Op("mov.f32 %s, 0f00000000", out[h])
		for col := 0; col < c.dim; col += 8 {
			off := 2*col + h*16*c.pitch
			wx, wy := k.Reg(ptx.U32), k.Reg(ptx.U32)
			k.Op("ld.shared.b32 %s, [%s+%d]", wx, bx, off)
			k.Op("ld.shared.b32 %s, [%s+%d]", wy, by, off)
			for _, sh := range []int{0, 16} {
				ex, ey := k.Reg(ptx.U32), k.Reg(ptx.U32)
				k.Op("shr.b32 %s, %s, %d", ex, wx, sh)
				k.Op("shr.b32 %s, %s, %d", ey, wy, sh)
				k.Op("and.b32 %s, %s, 65535", ex, ex)
				k.Op("and.b32 %s, %s, 65535", ey, ey)
				k.Op("fma.rn.f32 %s, %s, %s, %s", out[h], halfToF32(k, c.dt, ex), halfToF32(k, c.dt, ey), out[h])
			}
		}
		c.quadSum(out[h])
	}
	return out
}

func flashTCBackwardQ(dt DType, dim int, masked, dropped bool) *ptx.Kernel {
	c := newTC("flash_bwd_q", dt, dim, masked, dropped)
	k := c.k
	dq, delta := k.ParamPtr("dq"), k.ParamPtr("delta")
	q, kk, v, o, do := k.ParamPtr("q"), k.ParamPtr("k"), k.ParamPtr("v"), k.ParamPtr("o"), k.ParamPtr("do")
	lse, dlse := k.ParamPtr("lse"), k.ParamPtr("dlse")
	tq, tk, nb, blocks, scale2, scale, causal := c.params(true)
	tiles := c.start(flashTCTiles["flash_bwd_q"], false) // dO, then Q (and dQ staged); O; two sets of K and V
	kt, vt := tiles[1], tiles[2]
	kSrc, vSrc, kDeep := c.nRows(kt), c.nRows(vt), c.kRows(kt)
	causalP := c.causalPred(causal)
	c.blocks(blocks, nb, func(bm, q0 ptx.Reg) {
		c.blockMask(bm)
		km, vm := c.halfMatrix(kk, bm, tk), c.halfMatrix(v, bm, tk)
		rows := c.positions(q0)
		// δ = Σ dO⊙O − dlse per row, from dO and O staged in tiles 0 and 1.
		c.move(true, tiles[0], c.halfMatrix(do, bm, tq), q0, tq)
		c.move(true, tiles[1], c.halfMatrix(o, bm, tq), q0, tq)
		c.sync()
		dot := c.rowDot(tiles[0], tiles[1])
		dof := c.aFrags(tiles[0])
		var del, l2 [2]ptx.Reg
		for h := range 2 {
			del[h] = dot[h]
			k.Op("sub.rn.f32 %s, %s, %s", del[h], del[h], c.rowScalar(dlse, bm, tq, rows[h], 0))
			l2[h] = c.rowScalar(lse, bm, tq, rows[h], math.Log2E)
			// A row the mask leaves no key has lse −∞ and a NaN output:
			// its δ is 0, so that its zero probabilities make zero
			// gradients.
			dead := k.Reg(ptx.Pred)
			k.Op("setp.eq.f32 %s, %s, %s", dead, l2[h], ptx.Imm(ptx.F32, math.Inf(-1)))
			k.Op("selp.f32 %s, 0f00000000, %s, %s", del[h], del[h], dead)
			c.storeRowScalar(delta, bm, tq, rows[h], del[h])
		}
		c.sync()
		c.move(true, tiles[0], c.halfMatrix(q, bm, tq), q0, tq)
		c.sync()
		qf := c.aFrags(tiles[0]) // the loop's first barrier: O's tile is free
		grad := c.zeroAcc(dim / 8)
		zero := k.Reg(ptx.U64)
		k.Op("mov.u64 %s, 0", zero)
		c.pipelined(zero, c.causalEnd(causal, q0, tk), kt, []pipeSrc{{km, tk}, {vm, tk}}, c.maskOfKeys(q0), func(j0, off ptx.Reg) {
			s, dp := c.zeroAcc(FlashBlock/8), c.zeroAcc(FlashBlock/8)
			c.product(s, qf, c.shifted(kSrc, off))
			c.product(dp, dof, c.shifted(vSrc, off))
			if c.dropped { // dP of the weights before their drop: (dO·Vᵀ)⊙Z
				c.dropApply(dp, c.dropBits(bm, rows, j0, true))
			}
			c.scaledAcc(s, scale2)
			each(s, func(r ptx.Reg, half, _ int) {
				k.Op("sub.rn.f32 %s, %s, %s", r, r, l2[half])
				k.Op("ex2.approx.ftz.f32 %s, %s", r, r)
			})
			c.mask(s, rows, j0, tk, causalP, true, c.needMask(j0, tk, q0, causalP, true), "0f00000000")
			for nt := range s { // dS = P⊙(dP − δ), in dp
				for i := range 4 {
					k.Op("sub.rn.f32 %s, %s, %s", dp[nt][i], dp[nt][i], del[i>>1])
					k.Op("mul.rn.f32 %s, %s, %s", dp[nt][i], dp[nt][i], s[nt][i])
				}
			}
			c.product(grad, c.asLeft(dp), c.shifted(kDeep, off))
		})
		c.scaledAcc(grad, scale)
		c.stage(tiles[0], grad)
		c.sync()
		c.move(false, tiles[0], c.halfMatrix(dq, bm, tq), q0, tq)
		c.sync()
	})
	return k
}

func flashTCBackwardKV(dt DType, dim int, masked, dropped bool) *ptx.Kernel {
	c := newTC("flash_bwd_kv", dt, dim, masked, dropped)
	k := c.k
	dk, dv := k.ParamPtr("dk"), k.ParamPtr("dv")
	q, kk, v, do := k.ParamPtr("q"), k.ParamPtr("k"), k.ParamPtr("v"), k.ParamPtr("do")
	lse, delta := k.ParamPtr("lse"), k.ParamPtr("delta")
	tq, tk, nb, blocks, scale2, scale, causal := c.params(true)
	tiles := c.start(flashTCTiles["flash_bwd_kv"], true) // K, then Q; V, then dO; then Q and dO again (two buffers)
	lseT, deltaT := c.scalars, k.Reg(ptx.U64)
	k.Op("add.s64 %s, %s, %d", deltaT, lseT, 4*FlashBlock)
	qSrc, qDeep, doSrc, doDeep := c.nRows(tiles[0]), c.kRows(tiles[0]), c.nRows(tiles[1]), c.kRows(tiles[1])
	causalP := c.causalPred(causal)
	// The thread's columns' scalars: columns 8nt + 2t and + 1, as pairs.
	col2 := k.Reg(ptx.U32)
	k.Op("shl.b32 %s, %s, 1", col2, c.t)
	c.blocks(blocks, nb, func(bm, j0 ptx.Reg) {
		c.blockMask(bm)
		qm, dom := c.halfMatrix(q, bm, tq), c.halfMatrix(do, bm, tq)
		rows := c.positions(j0)
		c.move(true, tiles[0], c.halfMatrix(kk, bm, tk), j0, tk)
		c.move(true, tiles[1], c.halfMatrix(v, bm, tk), j0, tk)
		c.sync()
		kf, vf := c.aFrags(tiles[0]), c.aFrags(tiles[1])
		gk, gv := c.zeroAcc(dim/8), c.zeroAcc(dim/8)
		c.sync() // K's and V's tiles are free for the first Q and dO
		// The tile's lse (base 2) and δ, a thread each of the first
		// FlashBlock (0 past tq).
		scalars := func(i0, _ ptx.Reg) {
			first, skip := k.Reg(ptx.Pred), k.Label("tc_scalars")
			k.Op("setp.ge.u32 %s, %s, %d", first, c.tid, FlashBlock)
			k.Op("@%s bra %s", first, skip)
			row := k.Reg(ptx.U32)
			k.Op("cvt.u32.u64 %s, %s", row, i0)
			k.Op("add.u32 %s, %s, %s", row, row, c.tid)
			k.Op("st.shared.f32 [%s], %s", c.rowAddr(lseT, 1, c.tid), c.rowScalar(lse, bm, tq, row, math.Log2E))
			k.Op("st.shared.f32 [%s], %s", c.rowAddr(deltaT, 1, c.tid), c.rowScalar(delta, bm, tq, row, 0))
			k.Place(skip)
			if c.masked {
				c.loadMaskBits(i0, j0)
			}
		}
		c.pipelined(c.causalStart(causal, j0), tq, tiles[0], []pipeSrc{{qm, tq}, {dom, tq}}, scalars, func(i0, off ptx.Reg) {
			s, dp := c.zeroAcc(FlashBlock/8), c.zeroAcc(FlashBlock/8)
			c.product(s, kf, c.shifted(qSrc, off)) // Sᵀ = K·Qᵀ
			c.product(dp, vf, c.shifted(doSrc, off))
			var bits ptx.Reg
			if c.dropped { // dPᵀ of the weights before their drop: (V·dOᵀ)⊙Zᵀ
				bits = c.dropBits(bm, rows, i0, false)
				c.dropApply(dp, bits)
			}
			c.scaledAcc(s, scale2)
			la, da := c.rowAddr(lseT, 1, col2), c.rowAddr(deltaT, 1, col2)
			for nt := range s {
				lp := [2]ptx.Reg{k.Reg(ptx.F32), k.Reg(ptx.F32)}
				dd := [2]ptx.Reg{k.Reg(ptx.F32), k.Reg(ptx.F32)}
				k.Op("ld.shared.v2.f32 {%s, %s}, [%s+%d]", lp[0], lp[1], la, 32*nt)
				k.Op("ld.shared.v2.f32 {%s, %s}, [%s+%d]", dd[0], dd[1], da, 32*nt)
				for i := range 4 {
					k.Op("sub.rn.f32 %s, %s, %s", s[nt][i], s[nt][i], lp[i&1])
					k.Op("ex2.approx.ftz.f32 %s, %s", s[nt][i], s[nt][i])
					k.Op("sub.rn.f32 %s, %s, %s", dp[nt][i], dp[nt][i], dd[i&1])
				}
			}
			c.mask(s, rows, i0, tq, causalP, false, c.needMask(i0, tq, j0, causalP, false), "0f00000000")
			for nt := range s { // dSᵀ = Pᵀ⊙(dPᵀ − δ)
				for i := range 4 {
					k.Op("mul.rn.f32 %s, %s, %s", dp[nt][i], dp[nt][i], s[nt][i])
				}
			}
			if c.dropped { // dV from the kept weights: (P⊙Z)ᵀ·dO
				c.dropApply(s, bits)
			}
			c.product(gv, c.asLeft(s), c.shifted(doDeep, off))
			c.product(gk, c.asLeft(dp), c.shifted(qDeep, off))
		})
		c.scaledAcc(gk, scale)
		c.stage(tiles[0], gk)
		c.stage(tiles[1], gv)
		c.sync()
		c.move(false, tiles[0], c.halfMatrix(dk, bm, tk), j0, tk)
		c.move(false, tiles[1], c.halfMatrix(dv, bm, tk), j0, tk)
		c.sync()
	})
	return k
}
