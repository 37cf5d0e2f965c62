package emu

import (
	"math"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/tensor"
)

// mmaKernel loads a warp's fragments as the PTX ISA lays them out (its
// own index arithmetic, written from the ISA's tables, not the
// emulator's): A row-major [16 16], B as Bᵀ row-major [8 16] (the .col
// layout), C row-major [16 8] float32, all words of two 16-bit values
// where 16-bit; runs one mma and stores D as C.
func mmaKernel(target, half string) string {
	return strings.Replace(header, "sm_75", target, 1) + `
.visible .entry mma_tile(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d)
{
	.reg .b32 %r<20>;
	.reg .b64 %rd<30>;
	.reg .f32 %f<12>;
	ld.param.u64 %rd1, [a];
	ld.param.u64 %rd2, [b];
	ld.param.u64 %rd3, [c];
	ld.param.u64 %rd4, [d];
	mov.u32 %r1, %laneid;
	shr.u32 %r2, %r1, 2;
	and.b32 %r3, %r1, 3;
	mad.lo.u32 %r4, %r2, 8, %r3;
	mul.wide.u32 %rd5, %r4, 4;
	add.s64 %rd6, %rd1, %rd5;
	ld.global.b32 %r5, [%rd6];
	ld.global.b32 %r6, [%rd6+256];
	ld.global.b32 %r7, [%rd6+16];
	ld.global.b32 %r8, [%rd6+272];
	add.s64 %rd7, %rd2, %rd5;
	ld.global.b32 %r9, [%rd7];
	ld.global.b32 %r10, [%rd7+16];
	shl.b32 %r11, %r3, 1;
	mad.lo.u32 %r12, %r2, 8, %r11;
	mul.wide.u32 %rd8, %r12, 4;
	add.s64 %rd9, %rd3, %rd8;
	ld.global.f32 %f1, [%rd9];
	ld.global.f32 %f2, [%rd9+4];
	ld.global.f32 %f3, [%rd9+256];
	ld.global.f32 %f4, [%rd9+260];
	mma.sync.aligned.m16n8k16.row.col.f32.` + half + `.` + half + `.f32 {%f5, %f6, %f7, %f8}, {%r5, %r6, %r7, %r8}, {%r9, %r10}, {%f1, %f2, %f3, %f4};
	add.s64 %rd10, %rd4, %rd8;
	st.global.f32 [%rd10], %f5;
	st.global.f32 [%rd10+4], %f6;
	st.global.f32 [%rd10+256], %f7;
	st.global.f32 [%rd10+260], %f8;
	ret;
}
`
}

// packed is the words of rows×cols 16-bit values (row-major) of f.
func packed(rows, cols int, half string, f func(i, j int) float32) []float32 {
	out := make([]float32, rows*cols/2)
	for i := range rows {
		for j := 0; j < cols; j += 2 {
			bits := func(v float32) uint32 {
				if half == "bf16" {
					return uint32(tensor.ToBF16(v))
				}
				return uint32(tensor.ToF16(v))
			}
			out[(i*cols+j)/2] = math.Float32frombits(bits(f(i, j)) | bits(f(i, j+1))<<16)
		}
	}
	return out
}

func TestMMAComputesATile(t *testing.T) {
	for _, half := range []string{"bf16", "f16"} {
		e := newEnv(t)
		// Every element distinct and exact in both types, so that a
		// misplaced one changes D.
		av := func(i, k int) float32 { return float32(i*16+k-100) / 64 }
		bv := func(k, j int) float32 { return float32((k*8+j)%37-18) / 8 }
		cv := func(i, j int) float32 { return float32(i - j) }
		cs := make([]float32, 128)
		for i := range 16 {
			for j := range 8 {
				cs[i*8+j] = cv(i, j)
			}
		}
		a := e.upload(packed(16, 16, half, av))
		b := e.upload(packed(8, 16, half, func(j, k int) float32 { return bv(k, j) }))
		c, d := e.upload(cs), e.upload(make([]float32, 128))
		f := e.kernel(mmaKernel("sm_80", half), "mma_tile")
		if err := e.launch(f, 1, 32, new(cu.Args).Ptr(a).Ptr(b).Ptr(c).Ptr(d)); err != nil {
			t.Fatal(err)
		}
		got, err := e.download(d, 128)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 16 {
			for j := range 8 {
				want := float64(cv(i, j))
				for k := range 16 {
					want += float64(av(i, k)) * float64(bv(k, j))
				}
				if got[i*8+j] != float32(want) {
					t.Fatalf("%s: D[%d][%d] = %v, want %v", half, i, j, got[i*8+j], want)
				}
			}
		}
	}
}

func TestMMAWantsAWholeWarpAndSM80(t *testing.T) {
	e := newEnv(t)
	var err error
	e.do(func() error {
		_, err = e.ctx.ModuleLoad(mmaKernel("sm_75", "bf16"))
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "requires .target sm_80") {
		t.Fatalf("an mma in an sm_75 module loaded (%v); ptxas refuses it", err)
	}
	a, d := e.upload(make([]float32, 128)), e.upload(make([]float32, 128))
	f := e.kernel(mmaKernel("sm_80", "bf16"), "mma_tile")
	err = e.launch(f, 1, 16, new(cu.Args).Ptr(a).Ptr(a).Ptr(a).Ptr(d))
	if err == nil || !strings.Contains(err.Error(), "mma.sync") {
		t.Fatalf("an mma over half a warp ran (%v)", err)
	}
}

func TestPackedConversion(t *testing.T) {
	src := header + `
.visible .entry pack(.param .u64 out)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<2>;
	.reg .f32 %f<3>;
	ld.param.u64 %rd1, [out];
	mov.f32 %f1, 0f3F8C0000;
	mov.f32 %f2, 0fC0490FDB;
	cvt.rn.bf16x2.f32 %r1, %f1, %f2;
	cvt.rn.f16x2.f32 %r2, %f1, %f2;
	st.global.b32 [%rd1], %r1;
	st.global.b32 [%rd1+4], %r2;
	ret;
}
`
	got := newEnv(t).words(src, "pack", true, 1, 2)
	hi, lo := float32(1.09375), float32(-math.Pi)
	if w := uint32(tensor.ToBF16(hi))<<16 | uint32(tensor.ToBF16(lo)); got[0] != w {
		t.Errorf("cvt.rn.bf16x2.f32 gave %#x, want %#x", got[0], w)
	}
	if w := uint32(tensor.ToF16(hi))<<16 | uint32(tensor.ToF16(lo)); got[1] != w {
		t.Errorf("cvt.rn.f16x2.f32 gave %#x, want %#x", got[1], w)
	}
}

// ldmatrixKernel fills a 16x16 shared matrix of 16-bit values with their
// indices (row·16 + column), a lane 16 bytes, then each lane names row
// l%8 of matrix l/8 (the four 8x8 quarters: top left, bottom left, top
// right, bottom right, as an mma's A fragment orders them) and stores
// the four registers ldmatrix (mods: "x4" or "x4.trans") gives it.
func ldmatrixKernel(mods string) string {
	return header + `
.visible .entry ldm(.param .u64 out)
{
	.reg .b32 %r<30>;
	.reg .b64 %rd<10>;
	.shared .align 16 .b8 m[512];
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %laneid;
	shl.b32 %r2, %r1, 3;
	add.u32 %r3, %r2, 1;
	mad.lo.u32 %r4, %r3, 65536, %r2;
	add.u32 %r5, %r4, 131074;
	add.u32 %r6, %r5, 131074;
	add.u32 %r7, %r6, 131074;
	mov.u64 %rd2, m;
	mul.wide.u32 %rd3, %r1, 16;
	add.s64 %rd4, %rd2, %rd3;
	st.shared.v4.b32 [%rd4], {%r4, %r5, %r6, %r7};
	bar.sync 0;
	shr.u32 %r8, %r1, 3;
	and.b32 %r9, %r1, 7;
	and.b32 %r10, %r8, 1;
	shl.b32 %r10, %r10, 3;
	add.u32 %r10, %r10, %r9;
	shr.u32 %r11, %r8, 1;
	shl.b32 %r11, %r11, 4;
	mad.lo.u32 %r12, %r10, 32, %r11;
	cvt.u64.u32 %rd5, %r12;
	add.s64 %rd5, %rd5, %rd2;
	ldmatrix.sync.aligned.m8n8.` + mods + `.shared.b16 {%r20, %r21, %r22, %r23}, [%rd5];
	mul.wide.u32 %rd6, %r1, 16;
	add.s64 %rd7, %rd1, %rd6;
	st.global.v4.b32 [%rd7], {%r20, %r21, %r22, %r23};
	ret;
}
`
}

func TestLdmatrixGivesTheLayout(t *testing.T) {
	for _, trans := range []bool{false, true} {
		mods := "x4"
		if trans {
			mods += ".trans"
		}
		got := newEnv(t).words(ldmatrixKernel(mods), "ldm", true, 32, 128)
		for l := range 32 {
			for i := range 4 {
				r0, c0 := 8*(i&1), 8*(i>>1)
				lo := (r0+l/4)*16 + c0 + 2*(l%4)
				hi := lo + 1
				if trans {
					lo = (r0+2*(l%4))*16 + c0 + l/4
					hi = lo + 16
				}
				w := got[4*l+i]
				if int(w&0xffff) != lo || int(w>>16) != hi {
					t.Fatalf("%s: lane %d register %d holds %d, %d; want %d, %d", mods, l, i, w&0xffff, w>>16, lo, hi)
				}
			}
		}
	}
}

// asyncKernel copies 16 bytes a thread of src to shared memory by
// cp.async (lanes 16 and up with src-size 0: zeros), reads its slot
// before waiting (old), waits, syncs and stores its neighbour's slot.
const asyncKernel = `
.visible .entry async(.param .u64 src, .param .u64 out)
{
	.reg .pred %p<2>;
	.reg .b32 %r<12>;
	.reg .b64 %rd<10>;
	.shared .align 16 .b8 m[512];
	ld.param.u64 %rd1, [src];
	ld.param.u64 %rd2, [out];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd3, %r1, 16;
	mov.u64 %rd4, m;
	add.s64 %rd5, %rd4, %rd3;
	add.s64 %rd6, %rd1, %rd3;
	mov.u32 %r2, 7;
	st.shared.b32 [%rd5], %r2;
	bar.sync 0;
	setp.lt.u32 %p1, %r1, 16;
	selp.u32 %r3, 16, 0, %p1;
	cp.async.cg.shared.global [%rd5], [%rd6], 16, %r3;
	cp.async.commit_group;
	ld.shared.b32 %r4, [%rd5];
	cp.async.wait_group 0;
	bar.sync 0;
	add.u32 %r5, %r1, 1;
	and.b32 %r5, %r5, 31;
	mul.wide.u32 %rd7, %r5, 16;
	add.s64 %rd8, %rd4, %rd7;
	ld.shared.b32 %r6, [%rd8];
	mul.wide.u32 %rd9, %r1, 8;
	add.s64 %rd9, %rd2, %rd9;
	st.global.b32 [%rd9], %r4;
	st.global.b32 [%rd9+4], %r6;
	ret;
}
`

func TestAsyncCopiesCompleteAtTheWait(t *testing.T) {
	e := newEnv(t)
	src := make([]float32, 128)
	for i := range src {
		src[i] = float32(i)
	}
	in, out := e.upload(src), e.upload(make([]float32, 64))
	f := e.kernel(strings.Replace(header, "sm_75", "sm_80", 1)+asyncKernel, "async")
	if err := e.launch(f, 1, 32, new(cu.Args).Ptr(in).Ptr(out)); err != nil {
		t.Fatal(err)
	}
	got, err := e.download(out, 64)
	if err != nil {
		t.Fatal(err)
	}
	for l := range 32 {
		if before := math.Float32bits(got[2*l]); before != 7 {
			t.Errorf("lane %d read %#x from its slot before the wait, want the old 7", l, before)
		}
		n := (l + 1) % 32
		want := float32(4 * n) // the first float of its neighbour's 16 bytes
		if n >= 16 {
			want = 0 // src-size 0: zeros
		}
		if got[2*l+1] != want {
			t.Errorf("lane %d read %v from lane %d's slot after the wait, want %v", l, got[2*l+1], n, want)
		}
	}
	// Without the wait, the kernel exits with its copy pending.
	noWait := strings.Replace(asyncKernel, "\tcp.async.wait_group 0;\n", "", 1)
	f = e.kernel(strings.Replace(header, "sm_75", "sm_80", 1)+noWait, "async")
	if err := e.launch(f, 1, 32, new(cu.Args).Ptr(in).Ptr(out)); err == nil || !strings.Contains(err.Error(), "never waited") {
		t.Errorf("a kernel that never waits for its copies ran (%v)", err)
	}
}

// The scalar float16 conversions: cvt.rn.f16.f32 rounds to nearest even
// into a .b16 register, cvt.f32.f16 widens exactly; a NaN becomes the
// canonical one (the hardware keeps no payload kernels may count on); an
// .f16 operand in a 32-bit register is refused.
func TestScalarHalfConversion(t *testing.T) {
	src := header + `
.visible .entry half(.param .u64 out)
{
	.reg .b16 %h<3>;
	.reg .b32 %r<3>;
	.reg .b64 %rd<2>;
	.reg .f32 %f<4>;
	ld.param.u64 %rd1, [out];
	mov.f32 %f1, 0fC0490FDB;
	cvt.rn.f16.f32 %h1, %f1;
	cvt.f32.f16 %f2, %h1;
	mov.f32 %f3, 0f7FC00123;
	cvt.rn.f16.f32 %h2, %f3;
	cvt.u32.u16 %r1, %h1;
	cvt.u32.u16 %r2, %h2;
	st.global.b32 [%rd1], %r1;
	st.global.f32 [%rd1+4], %f2;
	st.global.b32 [%rd1+8], %r2;
	ret;
}
`
	e := newEnv(t)
	got := e.words(src, "half", false, 1, 3)
	h := tensor.ToF16(-math.Pi)
	if got[0] != uint32(h) || math.Float32frombits(got[1]) != h.Float32() || got[2] != 0x7fff {
		t.Errorf("conversions gave %#x, %g, %#x; want %#x, %g, 0x7fff", got[0], math.Float32frombits(got[1]), got[2], uint16(h), h.Float32())
	}
	err := e.ctx.Do(func() error {
		_, err := e.ctx.ModuleLoad(strings.Replace(src, "cvt.f32.f16 %f2, %h1;", "cvt.f32.f16 %f2, %r1;", 1))
		return err
	})
	expect(t, err, cu.ErrorInvalidPTX, "must be a .b16 register")
}
