package emu

import (
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/tensor"
)

const header = ".version 8.0\n.target sm_75\n.address_size 64\n"

// vecAdd is c[i] = a[i] + b[i] for i < n, one thread per element.
const vecAdd = header + `
.visible .entry vec_add(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
{
	.reg .pred %p<2>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<10>;
	.reg .f32 %f<4>;
	ld.param.u64 %rd1, [a];
	ld.param.u64 %rd2, [b];
	ld.param.u64 %rd3, [c];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r5, %r2, %r3, %r4;
	setp.ge.u32 %p1, %r5, %r1;
	@%p1 bra DONE;
	cvta.to.global.u64 %rd4, %rd1;
	cvta.to.global.u64 %rd5, %rd2;
	cvta.to.global.u64 %rd6, %rd3;
	mul.wide.u32 %rd7, %r5, 4;
	add.s64 %rd8, %rd4, %rd7;
	ld.global.f32 %f1, [%rd8];
	add.s64 %rd8, %rd5, %rd7;
	ld.global.f32 %f2, [%rd8];
	add.rn.f32 %f3, %f1, %f2;
	add.s64 %rd9, %rd6, %rd7;
	st.global.f32 [%rd9], %f3;
DONE:
	ret;
}
`

// blockSum sums 64 floats per block by a tree in shared memory; with
// barrier false the bar.sync inside the tree is left out.
func blockSum(barrier bool) string {
	b := "\tbar.sync 0;\n"
	if !barrier {
		b = ""
	}
	return header + `
.visible .entry block_sum(.param .u64 x, .param .u64 out)
{
	.reg .pred %p<3>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<12>;
	.reg .f32 %f<4>;
	.shared .align 4 .b8 buf[256];
	ld.param.u64 %rd1, [x];
	ld.param.u64 %rd2, [out];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ctaid.x;
	mul.wide.u32 %rd3, %r2, 256;
	add.s64 %rd4, %rd1, %rd3;
	mul.wide.u32 %rd5, %r1, 4;
	add.s64 %rd6, %rd4, %rd5;
	ld.global.f32 %f1, [%rd6];
	mov.u64 %rd7, buf;
	add.s64 %rd8, %rd7, %rd5;
	st.shared.f32 [%rd8], %f1;
	bar.sync 0;
	mov.u32 %r3, 32;
LOOP:
	setp.ge.u32 %p1, %r1, %r3;
	@%p1 bra SKIP;
	add.s32 %r4, %r1, %r3;
	mul.wide.u32 %rd9, %r4, 4;
	add.s64 %rd10, %rd7, %rd9;
	ld.shared.f32 %f2, [%rd10];
	ld.shared.f32 %f3, [%rd8];
	add.rn.f32 %f3, %f3, %f2;
	st.shared.f32 [%rd8], %f3;
SKIP:
` + b + `	shr.u32 %r3, %r3, 1;
	setp.ne.u32 %p2, %r3, 0;
	@%p2 bra LOOP;
	setp.ne.u32 %p1, %r1, 0;
	@%p1 bra DONE;
	ld.shared.f32 %f1, [buf];
	mul.wide.u32 %rd11, %r2, 4;
	add.s64 %rd11, %rd2, %rd11;
	st.global.f32 [%rd11], %f1;
DONE:
	ret;
}
`
}

// env is an emulated context, a stream and helpers that call inside Do.
type env struct {
	t   *testing.T
	ctx cu.Context
	s   cu.Stream
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx, err := New(DefaultConfig).Retain(0)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: ctx}
	e.do(func() (err error) { e.s, err = ctx.StreamCreate(); return })
	return e
}

func (e *env) do(fn func() error) {
	e.t.Helper()
	if err := e.ctx.Do(fn); err != nil {
		e.t.Fatal(err)
	}
}

// upload copies float32s to a new device buffer.
func (e *env) upload(v []float32) cu.Ptr {
	e.t.Helper()
	var p cu.Ptr
	e.do(func() error {
		host, err := e.ctx.MemAllocHost(4 * len(v))
		if err != nil {
			return err
		}
		for i, x := range v {
			binary.LittleEndian.PutUint32(host[4*i:], math.Float32bits(x))
		}
		if p, err = e.ctx.MemAlloc(4*len(v), e.s); err != nil {
			return err
		}
		if err := e.ctx.MemcpyHtoD(p, host, e.s); err != nil {
			return err
		}
		if err := e.ctx.StreamSynchronize(e.s); err != nil {
			return err
		}
		return e.ctx.MemFreeHost(host)
	})
	return p
}

// gemm runs g and returns the n float32 of its C.
func (e *env) gemm(g cu.Gemm, n int) []float32 {
	e.t.Helper()
	e.do(func() error {
		if err := e.ctx.Gemm(e.s, g); err != nil {
			return err
		}
		return e.ctx.StreamSynchronize(e.s)
	})
	got, err := e.download(g.C, n)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func (e *env) download(p cu.Ptr, n int) ([]float32, error) {
	var out []float32
	err := e.ctx.Do(func() error {
		host, err := e.ctx.MemAllocHost(4 * n)
		if err != nil {
			return err
		}
		if err := e.ctx.MemcpyDtoH(host, p, e.s); err != nil {
			return err
		}
		if err := e.ctx.StreamSynchronize(e.s); err != nil {
			return err
		}
		for i := range n {
			out = append(out, math.Float32frombits(binary.LittleEndian.Uint32(host[4*i:])))
		}
		return e.ctx.MemFreeHost(host)
	})
	return out, err
}

func (e *env) kernel(ptx, name string) cu.Function {
	e.t.Helper()
	var f cu.Function
	e.do(func() error {
		m, err := e.ctx.ModuleLoad(ptx)
		if err != nil {
			return err
		}
		f, err = e.ctx.Function(m, name)
		return err
	})
	return f
}

// words launches kernel name of src (an sm_80 module where sm80, for the
// tensor cores' instructions) on one block of threads with its one
// parameter out, a buffer of n words, and returns them.
func (e *env) words(src, name string, sm80 bool, threads, n int) []uint32 {
	e.t.Helper()
	if sm80 {
		src = strings.Replace(src, ".target sm_75", ".target sm_80", 1)
	}
	out := e.upload(make([]float32, n))
	if err := e.launch(e.kernel(src, name), 1, threads, new(cu.Args).Ptr(out)); err != nil {
		e.t.Fatal(err)
	}
	got, err := e.download(out, n)
	if err != nil {
		e.t.Fatal(err)
	}
	w := make([]uint32, n)
	for i, v := range got {
		w[i] = math.Float32bits(v)
	}
	return w
}

func (e *env) launch(f cu.Function, grid, block int, args *cu.Args) error {
	return e.ctx.Do(func() error {
		if err := e.ctx.Launch(f, cu.Dim3{X: grid, Y: 1, Z: 1}, cu.Dim3{X: block, Y: 1, Z: 1}, 0, e.s, args); err != nil {
			return err
		}
		return e.ctx.StreamSynchronize(e.s)
	})
}

func TestVectorAdd(t *testing.T) {
	e := newEnv(t)
	n := 1000
	a, b := make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], b[i] = float32(i)*0.5, float32(n-i)
	}
	pa, pb, pc := e.upload(a), e.upload(b), e.upload(make([]float32, n))
	f := e.kernel(vecAdd, "vec_add")
	if err := e.launch(f, (n+127)/128, 128, new(cu.Args).Ptr(pa).Ptr(pb).Ptr(pc).U32(uint32(n))); err != nil {
		t.Fatal(err)
	}
	got, err := e.download(pc, n)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != a[i]+b[i] {
			t.Fatalf("c[%d] = %v, want %v", i, got[i], a[i]+b[i])
		}
	}
}

func TestBarriersAndSharedMemory(t *testing.T) {
	e := newEnv(t)
	x := make([]float32, 3*64)
	want := make([]float32, 3)
	for i := range x {
		x[i] = float32(i%64) + float32(i/64)*100
		want[i/64] += x[i]
	}
	px, pout := e.upload(x), e.upload(make([]float32, 3))
	f := e.kernel(blockSum(true), "block_sum")
	if err := e.launch(f, 3, 64, new(cu.Args).Ptr(px).Ptr(pout)); err != nil {
		t.Fatal(err)
	}
	got, err := e.download(pout, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d: %v, want %v", i, got[i], want[i])
		}
	}
}

// expect fails t unless err is a *cu.Error of code whose text holds msg.
func expect(t *testing.T, err error, code int, msg string) {
	t.Helper()
	ce, ok := err.(*cu.Error)
	if !ok || ce.Code != code || !strings.Contains(err.Error(), msg) {
		t.Fatalf("got %v, want a %d error containing %q", err, code, msg)
	}
}

// Planted faults: each must fail, naming what went wrong.
func TestPlantedFaults(t *testing.T) {
	t.Run("missing barrier", func(t *testing.T) {
		e := newEnv(t)
		px, pout := e.upload(make([]float32, 64)), e.upload(make([]float32, 1))
		err := e.launch(e.kernel(blockSum(false), "block_sum"), 1, 64, new(cu.Args).Ptr(px).Ptr(pout))
		expect(t, err, cu.ErrorIllegalAddress, "shared memory race")
	})
	t.Run("out-of-bounds store", func(t *testing.T) {
		e := newEnv(t)
		pa, pb, pc := e.upload(make([]float32, 10)), e.upload(make([]float32, 10)), e.upload(make([]float32, 9))
		err := e.launch(e.kernel(vecAdd, "vec_add"), 1, 32, new(cu.Args).Ptr(pa).Ptr(pb).Ptr(pc).U32(10))
		expect(t, err, cu.ErrorIllegalAddress, "out-of-bounds global store")
		expect(t, err, cu.ErrorIllegalAddress, "(st.global.f32 [%rd9], %f3), thread (9,0,0)") // the statement as written
		// The fault sticks to the context.
		_, err = e.download(pa, 1)
		expect(t, err, cu.ErrorIllegalAddress, "out-of-bounds")
	})
	t.Run("wrong parameter size", func(t *testing.T) {
		e := newEnv(t)
		pa := e.upload(make([]float32, 4))
		err := e.launch(e.kernel(vecAdd, "vec_add"), 1, 4, new(cu.Args).Ptr(pa).Ptr(pa).Ptr(pa).U64(4))
		expect(t, err, cu.ErrorInvalidValue, "parameter 3 (n, .u32) is 4 bytes, got 8")
		err = e.launch(e.kernel(vecAdd, "vec_add"), 1, 4, new(cu.Args).Ptr(pa).Ptr(pa))
		expect(t, err, cu.ErrorInvalidValue, "takes 4 parameters, got 2")
	})
	t.Run("context not current", func(t *testing.T) {
		e := newEnv(t)
		_, err := e.ctx.StreamCreate()
		expect(t, err, cu.ErrorInvalidContext, "not current on this thread")
	})
	t.Run("unimplemented instruction", func(t *testing.T) {
		e := newEnv(t)
		err := e.ctx.Do(func() error {
			_, err := e.ctx.ModuleLoad(strings.Replace(vecAdd, "add.rn.f32 %f3, %f1, %f2;", "sin.approx.f32 %f3, %f1;", 1))
			return err
		})
		expect(t, err, cu.ErrorInvalidPTX, "unsupported instruction sin.approx.f32")
	})
	t.Run("register of the wrong class", func(t *testing.T) {
		e := newEnv(t)
		err := e.ctx.Do(func() error {
			_, err := e.ctx.ModuleLoad(strings.Replace(vecAdd, "add.rn.f32 %f3, %f1, %f2;", "add.rn.f32 %f3, %f1, %r2;", 1))
			return err
		})
		expect(t, err, cu.ErrorInvalidPTX, "register %r2 is .b32, the instruction wants .f32")
	})
	// What ptxas refused on an H200 (2026-11-28) that the emulator had
	// let through: a 16-bit mov into a 32-bit register, a shared array
	// named as a parameter. A 16-bit register takes the mov.
	for _, c := range []struct{ name, from, to, msg string }{
		{"16-bit mov into a 32-bit register", "mov.u32 %r4, %tid.x;", "mov.u32 %r4, %tid.x;\n\tmov.u16 %r4, 1;", "register %r4 is 32 bits wide, the instruction's type .u16 is 16"},
		{"shared array named as a parameter", ".reg .pred %p<2>;", ".reg .pred %p<2>;\n\t.shared .align 4 .b8 n[64];", "shared variable n has the name of a parameter"},
		{"shared array defined twice", ".reg .pred %p<2>;", ".reg .pred %p<2>;\n\t.shared .align 4 .b8 s[64];\n\t.shared .align 4 .b8 s[64];", "shared variable s is defined twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			err := e.ctx.Do(func() error {
				_, err := e.ctx.ModuleLoad(strings.Replace(vecAdd, c.from, c.to, 1))
				return err
			})
			expect(t, err, cu.ErrorInvalidPTX, c.msg)
		})
	}
	t.Run("16-bit mov into a 16-bit register", func(t *testing.T) {
		e := newEnv(t)
		err := e.ctx.Do(func() error {
			_, err := e.ctx.ModuleLoad(strings.Replace(vecAdd, ".reg .f32 %f<4>;", ".reg .f32 %f<4>;\n\t.reg .b16 %h1;\n\tmov.u16 %h1, 1;", 1))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("target newer than the device", func(t *testing.T) {
		e := newEnv(t)
		err := e.ctx.Do(func() error {
			_, err := e.ctx.ModuleLoad(strings.Replace(vecAdd, "sm_75", "sm_100", 1))
			return err
		})
		expect(t, err, cu.ErrorInvalidPTX, "newer than the device")
	})
	t.Run("read before synchronising", func(t *testing.T) {
		e := newEnv(t)
		p := e.upload([]float32{1, 2})
		var early []byte
		e.do(func() error {
			host, err := e.ctx.MemAllocHost(8)
			if err != nil {
				return err
			}
			if err := e.ctx.MemcpyDtoH(host, p, e.s); err != nil {
				return err
			}
			early = append(early, host...) // read before the stream ran the copy
			return e.ctx.StreamSynchronize(e.s)
		})
		if early[0] != poison {
			t.Errorf("the destination read before synchronising holds %v, not the poison", early)
		}
	})
	t.Run("pageable host memory", func(t *testing.T) {
		e := newEnv(t)
		p := e.upload([]float32{1})
		err := e.ctx.Do(func() error { return e.ctx.MemcpyHtoD(p, make([]byte, 4), e.s) })
		expect(t, err, cu.ErrorInvalidValue, "page-locked")
	})
	t.Run("divergent barrier", func(t *testing.T) {
		e := newEnv(t)
		src := header + `
.visible .entry diverge()
{
	.reg .pred %p<2>;
	.reg .b32 %r<2>;
	mov.u32 %r1, %tid.x;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 bra DONE;
	bar.sync 0;
DONE:
	ret;
}
`
		err := e.launch(e.kernel(src, "diverge"), 1, 4, new(cu.Args))
		expect(t, err, cu.ErrorIllegalAddress, "wait at the barrier while 1 have exited")
	})
}

func TestGemmMatchesNaive(t *testing.T) {
	e := newEnv(t)
	m, n, k := 5, 4, 3
	a, b := make([]float32, m*k), make([]float32, k*n)
	for i := range a {
		a[i] = float32(i%7) - 2.5
	}
	for i := range b {
		b[i] = float32(i%5) * 0.25
	}
	pa, pb, pc := e.upload(a), e.upload(b), e.upload(make([]float32, m*n))
	// Row-major A [m k], B [k n] are column-major Aᵀ, Bᵀ: C row-major [m n]
	// is column-major Cᵀ = Bᵀ Aᵀ, so swap the operands.
	g := cu.Gemm{Type: cu.Float32, M: n, N: m, K: k, Alpha: 1, A: pb, LDA: n, B: pa, LDB: k, C: pc, LDC: n, Batch: 1}
	got := e.gemm(g, m*n)
	for i := range m {
		for j := range n {
			s := float32(0)
			for p := range k {
				s += a[i*k+p] * b[p*n+j]
			}
			if d := math.Abs(float64(got[i*n+j] - s)); d > 1e-5 {
				t.Fatalf("C[%d][%d] = %v, want %v", i, j, got[i*n+j], s)
			}
		}
	}
	bad := g
	bad.LDA = 1
	err := e.ctx.Do(func() error { return e.ctx.Gemm(e.s, bad) })
	if ce, ok := err.(*cu.Error); !ok || ce.Code != cu.ErrorInvalidValue {
		t.Errorf("a bad lda: %v", err)
	}
}

// A GEMM of bfloat16 operands into float32 (cu.Gemm.In) sums the
// operands' exact products in float32 and counts as mixed; In with
// another operand type, output type, TF32 or an epilogue is refused
// before anything is queued.
func TestGemmMixedTypes(t *testing.T) {
	e := newEnv(t)
	m, n, k := 4, 3, 2
	a, b := make([]tensor.BF16, m*k), make([]tensor.BF16, k*n)
	for i := range a {
		a[i] = tensor.ToBF16(float32(i%7)*1.0078125 - 2.5)
	}
	for i := range b {
		b[i] = tensor.ToBF16(float32(i%5)*0.2503 + 0.001)
	}
	// Two bfloat16 values a float32 slot, as they lie in memory.
	pairs := func(v []tensor.BF16) []float32 {
		out := make([]float32, len(v)/2)
		for i := range out {
			out[i] = math.Float32frombits(uint32(v[2*i]) | uint32(v[2*i+1])<<16)
		}
		return out
	}
	pa, pb, pc := e.upload(pairs(a)), e.upload(pairs(b)), e.upload(make([]float32, m*n))
	g := cu.Gemm{Type: cu.Float32, In: cu.BFloat16, M: n, N: m, K: k, Alpha: 1, A: pb, LDA: n, B: pa, LDB: k, C: pc, LDC: n, Batch: 1}
	ctx := e.ctx.(*Context)
	before := ctx.MixedGemms
	got := e.gemm(g, m*n)
	if ctx.MixedGemms != before+1 {
		t.Errorf("MixedGemms went from %d to %d", before, ctx.MixedGemms)
	}
	for i := range m {
		for j := range n {
			s := float32(0)
			for p := range k {
				s += a[i*k+p].Float32() * b[p*n+j].Float32()
			}
			if got[i*n+j] != s {
				t.Fatalf("C[%d][%d] = %v, want %v", i, j, got[i*n+j], s)
			}
		}
	}
	for _, bad := range []func(g *cu.Gemm){
		func(g *cu.Gemm) { g.In = cu.Float64 },
		func(g *cu.Gemm) { g.Type = cu.BFloat16 },
		func(g *cu.Gemm) { g.TF32 = true },
		func(g *cu.Gemm) { g.Relu = true },
		func(g *cu.Gemm) { g.FP8A, g.FP8B = cu.Float8E4M3, cu.Float8E4M3 },
	} {
		b := g
		bad(&b)
		if err := e.ctx.Do(func() error { return e.ctx.Gemm(e.s, b) }); !errors.Is(err, cu.ErrGemmType) {
			t.Errorf("%+v: %v, want ErrGemmType", b, err)
		}
	}
}

// mul.hi's high halves agree with exact products, signed and unsigned, at
// both widths.
func TestMulHi(t *testing.T) {
	vals := []uint64{0, 1, 2, 3, 0x7fffffff, 0x80000000, 0xffffffff, 0x12345678, 1 << 40, math.MaxInt64, 1 << 63, math.MaxUint64, 0xdeadbeefcafef00d}
	for _, x := range vals {
		for _, y := range vals {
			for _, signed := range []bool{false, true} {
				for _, size := range []int{4, 8} {
					var want *big.Int
					bx, by := new(big.Int), new(big.Int)
					switch {
					case size == 4 && signed:
						bx.SetInt64(int64(int32(x)))
						by.SetInt64(int64(int32(y)))
					case size == 4:
						bx.SetUint64(x & 0xffffffff)
						by.SetUint64(y & 0xffffffff)
					case signed:
						bx.SetInt64(int64(x))
						by.SetInt64(int64(y))
					default:
						bx.SetUint64(x)
						by.SetUint64(y)
					}
					want = new(big.Int).Rsh(new(big.Int).Mul(bx, by), uint(8*size))
					mask := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(8*size)), big.NewInt(1))
					want.And(want, mask) // two's complement bits of the high half
					if got := mulHi(x, y, size, signed); got != want.Uint64() {
						t.Errorf("mul.hi (%d bytes, signed %v) %#x * %#x = %#x, want %#x", size, signed, x, y, got, want.Uint64())
					}
				}
			}
		}
	}
}

// predicateOps writes, for thread i of 4, out[i] = 1 where not (i < 2 or
// i == 3), else 0, through not.pred and or.pred (a selp and a guard).
const predicateOps = header + `
.visible .entry pred_ops(.param .u64 out)
{
	.reg .pred %p<6>;
	.reg .b32 %r<3>;
	.reg .b64 %rd<4>;
	.reg .f32 %f<3>;
	ld.param.u64 %rd1, [out];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 2;
	setp.eq.u32 %p2, %r1, 3;
	or.pred %p3, %p1, %p2;
	not.pred %p4, %p3;
	mov.f32 %f1, 0f3F800000;
	mov.f32 %f2, 0f00000000;
	selp.f32 %f1, %f1, %f2, %p4;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.f32 [%rd3], %f2;
	@%p4 st.global.f32 [%rd3], %f1;
	ret;
}
`

// A predicate is one bit: not.pred of true is false (it was all the other
// bits, true, so that not(or(a, b)) held for every thread).
func TestPredicateOps(t *testing.T) {
	e := newEnv(t)
	out := e.upload(make([]float32, 4))
	if err := e.launch(e.kernel(predicateOps, "pred_ops"), 1, 4, new(cu.Args).Ptr(out)); err != nil {
		t.Fatal(err)
	}
	got, err := e.download(out, 4)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{0, 0, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// A 64-bit shift takes its amount from a 32-bit register, as the PTX ISA
// has it (b is .u32 whatever the type): thread i stores the low word of
// 0x0123456789abcdef >> 4i and of 1 << (i+32) >> 32 (shl, then shr).
func TestWideShiftsTakeA32BitAmount(t *testing.T) {
	src := header + `
.visible .entry shifts(.param .u64 out)
{
	.reg .b32 %r<6>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %tid.x;
	shl.b32 %r2, %r1, 2;
	mov.b64 %rd2, 81985529216486895;
	shr.b64 %rd3, %rd2, %r2;
	add.u32 %r3, %r1, 32;
	mov.b64 %rd4, 1;
	shl.b64 %rd4, %rd4, %r3;
	shr.u64 %rd4, %rd4, 32;
	cvt.u32.u64 %r4, %rd3;
	cvt.u32.u64 %r5, %rd4;
	mul.wide.u32 %rd5, %r1, 8;
	add.s64 %rd6, %rd1, %rd5;
	st.global.b32 [%rd6], %r4;
	st.global.b32 [%rd6+4], %r5;
	ret;
}
`
	got := newEnv(t).words(src, "shifts", false, 8, 16)
	for i := range 8 {
		if w, v := uint32(uint64(0x0123456789abcdef)>>(4*i)), got[2*i]; v != w {
			t.Errorf("thread %d: shr.b64 by a 32-bit register gave %#x, want %#x", i, v, w)
		}
		if w, v := uint32(1)<<i, got[2*i+1]; v != w {
			t.Errorf("thread %d: shl.b64 then shr.u64 gave %#x, want %#x", i, v, w)
		}
	}
}
