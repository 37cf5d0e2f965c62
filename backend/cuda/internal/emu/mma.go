package emu

import (
	"fmt"
	"math"
	"strings"

	"github.com/eagerflow/eagerflow/tensor"
)

// The tensor cores' warp-wide product, mma.sync.aligned.m16n8k16.row.col
// .f32.<bf16|f16>.<bf16|f16>.f32 d, a, b, c: D (16x8, float32) = A
// (16x16) · B (16x8) + C, each matrix spread over the warp's 32 lanes as
// the PTX ISA's "Matrix Fragments for mma.m16n8k16 with floating point
// type" lays them out (lane l: group g = l/4, t = l%4; a register of
// the 16-bit types holds two elements, the lower-numbered in its low
// half):
//
//	A: a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1], a2 = A[g][2t+8, 2t+9], a3 = A[g+8][2t+8, 2t+9]
//	B: b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g]
//	C, D: c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1]
//
// It is a meeting of the warp's lanes, as shfl.sync is (warp.go): every
// lane of a whole warp brings its fragments, then each takes its part of
// D. Products of the 16-bit types are exact in float64; the emulator sums
// them and C in float64 and rounds once to float32 (the tensor cores add
// with fewer bits: tests allow for that). ptxas wants sm_80 or later for
// these types; so does the emulator (the module's .target).

// mmaOp is a compiled mma.sync.
type mmaOp struct {
	half string // bf16 or f16: A's and B's type
	d    [4]setter
	a    [4]getter
	b    [2]getter
	c    [4]getter
}

// mmaOperands is what a lane brings to an mma: a0-a3, b0-b1, c0-c3.
type mmaOperands [10]uint64

// mmaMinSM is the oldest target that has the 16-bit mma and the packed
// conversions from float32.
const mmaMinSM = 80

func (cc *compiler) mma(mods []string, args []string) (*shflOp, error) {
	want := []string{"sync", "aligned", "m16n8k16", "row", "col", "f32", "", "", "f32"}
	ok := len(mods) == len(want) && (mods[6] == "bf16" || mods[6] == "f16") && mods[7] == mods[6]
	for i := 0; ok && i < len(want); i++ {
		ok = want[i] == "" || mods[i] == want[i]
	}
	if !ok {
		return nil, fmt.Errorf("only mma.sync.aligned.m16n8k16.row.col.f32.<bf16|f16>.<bf16|f16>.f32 is supported")
	}
	if cc.sm < mmaMinSM {
		return nil, fmt.Errorf("mma with .%s requires .target sm_%d or higher (the module's is sm_%d)", mods[6], mmaMinSM, cc.sm)
	}
	if len(args) != 4 {
		return nil, fmt.Errorf("mma takes d, a, b and c")
	}
	op := &mmaOp{half: mods[6]}
	lists := make([][]string, 4)
	for i, n := range []int{4, 4, 2, 4} {
		l, err := regList(args[i], n)
		if err != nil {
			return nil, err
		}
		lists[i] = l
	}
	var err error
	for i, n := range lists[0] {
		if op.d[i], err = cc.dst(n, "f32", false); err != nil {
			return nil, err
		}
	}
	for i, n := range lists[1] {
		if op.a[i], err = cc.src(n, "b32", true); err != nil {
			return nil, err
		}
	}
	for i, n := range lists[2] {
		if op.b[i], err = cc.src(n, "b32", true); err != nil {
			return nil, err
		}
	}
	for i, n := range lists[3] {
		if op.c[i], err = cc.src(n, "f32", false); err != nil {
			return nil, err
		}
	}
	return &shflOp{mode: "mma", mma: op}, nil
}

// regList splits a {r0, r1, ...} operand of n registers.
func regList(s string, n int) ([]string, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return nil, fmt.Errorf("operand %q is not a {list} of %d registers", s, n)
	}
	names := strings.Split(s[1:len(s)-1], ",")
	if len(names) != n {
		return nil, fmt.Errorf("operand %q names %d registers, not %d", s, len(names), n)
	}
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	return names, nil
}

// arriveMMA is what lane t brings to the mma op.
func arriveMMA(op *mmaOp, t *thread, b *block) mmaOperands {
	var v mmaOperands
	for i, g := range op.a {
		v[i] = g(t, b)
	}
	for i, g := range op.b {
		v[4+i] = g(t, b)
	}
	for i, g := range op.c {
		v[6+i] = g(t, b)
	}
	return v
}

// resolveMMA gives each of a whole warp's lanes its part of D.
func resolveMMA(op *mmaOp, lanes []thread) {
	half := func(bits uint64) float64 {
		if op.half == "bf16" {
			return float64(tensor.BF16(uint16(bits)).Float32())
		}
		return float64(tensor.F16(uint16(bits)).Float32())
	}
	var a [16][16]float64
	var b [16][8]float64
	var c [16][8]float64
	for l := range lanes {
		g, t := l/4, l%4
		v := lanes[l].mma
		for i, at := range [4][2]int{{g, 2 * t}, {g + 8, 2 * t}, {g, 2*t + 8}, {g + 8, 2*t + 8}} {
			a[at[0]][at[1]], a[at[0]][at[1]+1] = half(v[i]), half(v[i]>>16)
		}
		for i, k := range [2]int{2 * t, 2*t + 8} {
			b[k][g], b[k+1][g] = half(v[4+i]), half(v[4+i]>>16)
		}
		for i, at := range [4][2]int{{g, 2 * t}, {g, 2*t + 1}, {g + 8, 2 * t}, {g + 8, 2*t + 1}} {
			c[at[0]][at[1]] = float64(math.Float32frombits(uint32(v[6+i])))
		}
	}
	for l := range lanes {
		g, t := l/4, l%4
		for i, at := range [4][2]int{{g, 2 * t}, {g, 2*t + 1}, {g + 8, 2 * t}, {g + 8, 2*t + 1}} {
			s := c[at[0]][at[1]]
			for k := range 16 {
				s += a[at[0]][k] * b[k][at[1]]
			}
			op.d[i](&lanes[l], uint64(math.Float32bits(float32(s))))
		}
	}
}

// cvtPacked compiles cvt.rn.<bf16x2|f16x2>.f32 d, a, b: a rounded to the
// 16-bit type (to nearest, ties to even) in d's high half, b in its low.
func (cc *compiler) cvtPacked(mods []string, args []string) (func(*run, *block, *thread), error) {
	if len(mods) != 3 || mods[0] != "rn" || mods[2] != "f32" || len(args) != 3 {
		return nil, fmt.Errorf("only cvt.rn.<bf16x2|f16x2>.f32 d, a, b is supported")
	}
	if cc.sm < mmaMinSM {
		return nil, fmt.Errorf("cvt to .%s requires .target sm_%d or higher (the module's is sm_%d)", mods[1], mmaMinSM, cc.sm)
	}
	round := func(f float32) uint64 { return uint64(tensor.ToBF16(f)) }
	if mods[1] == "f16x2" {
		round = func(f float32) uint64 { return uint64(tensor.ToF16(f)) }
	}
	d, err := cc.dst(args[0], "b32", true)
	if err != nil {
		return nil, err
	}
	hi, err := cc.src(args[1], "f32", false)
	if err != nil {
		return nil, err
	}
	lo, err := cc.src(args[2], "f32", false)
	if err != nil {
		return nil, err
	}
	return func(r *run, b *block, t *thread) {
		d(t, round(math.Float32frombits(uint32(hi(t, b))))<<16|round(math.Float32frombits(uint32(lo(t, b)))))
	}, nil
}

// ldmatrixOp is a compiled ldmatrix.sync.aligned.m8n8.x<n>[.trans]
// .shared.b16 {d...}, [a]: n 8x8 matrices of 16-bit elements from shared
// memory, each row 16 bytes at an address one lane gives (lane 8i+r: row
// r of matrix i), into a register a matrix in every lane. Lane l receives
// row l/4's elements 2(l%4) and 2(l%4)+1 (low half first); with .trans,
// column l/4's elements of rows 2(l%4) and 2(l%4)+1: the matrix
// transposed. The rows are read as the lanes that name them read (the
// race checks see them so).
type ldmatrixOp struct {
	trans bool
	d     []setter
	addr  func(t *thread, b *block) uint64
}

func (cc *compiler) ldmatrix(mods []string, args []string) (*shflOp, error) {
	trans := len(mods) == 7 && mods[4] == "trans"
	if trans {
		mods = append(mods[:4:4], mods[5:]...)
	}
	n := map[string]int{"x1": 1, "x2": 2, "x4": 4}[mods[min(3, len(mods)-1)]]
	if len(mods) != 6 || mods[0] != "sync" || mods[1] != "aligned" || mods[2] != "m8n8" || n == 0 || mods[4] != "shared" || mods[5] != "b16" {
		return nil, fmt.Errorf("only ldmatrix.sync.aligned.m8n8.<x1|x2|x4>[.trans].shared.b16 is supported")
	}
	if cc.sm < 75 {
		return nil, fmt.Errorf("ldmatrix requires .target sm_75 or higher")
	}
	if len(args) != 2 {
		return nil, fmt.Errorf("ldmatrix takes {d...} and an address")
	}
	names, err := regList(args[0], n)
	if err != nil {
		return nil, err
	}
	op := &ldmatrixOp{trans: trans}
	for _, name := range names {
		d, err := cc.dst(name, "b32", true)
		if err != nil {
			return nil, err
		}
		op.d = append(op.d, d)
	}
	if op.addr, err = cc.address(args[1], "shared"); err != nil {
		return nil, err
	}
	return &shflOp{mode: "ldmatrix", ldm: op}, nil
}

// resolveLdmatrix reads a whole warp's matrices and gives each lane its
// registers; false where a row's access faults.
func (r *run) resolveLdmatrix(op *ldmatrixOp, b *block, lanes []thread) bool {
	var rows [4][8][8]uint16
	for i := range op.d {
		for row := range 8 {
			t := &lanes[8*i+row]
			at := t.mma[0]
			r.cur = t
			if !r.sharedAccess(b, t, at, 16, false) {
				return false
			}
			for e := range 8 {
				rows[i][row][e] = uint16(b.shared[at+uint64(2*e)]) | uint16(b.shared[at+uint64(2*e)+1])<<8
			}
		}
	}
	for l := range lanes {
		for i, d := range op.d {
			lo, hi := rows[i][l/4][2*(l%4)], rows[i][l/4][2*(l%4)+1]
			if op.trans {
				lo, hi = rows[i][2*(l%4)][l/4], rows[i][2*(l%4)+1][l/4]
			}
			d(&lanes[l], uint64(lo)|uint64(hi)<<16)
		}
	}
	return true
}
