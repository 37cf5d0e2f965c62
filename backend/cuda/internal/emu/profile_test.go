package emu

import (
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// gatherStrided is c[i] = a[i*s] + a[0] + float(i / s) for i < n: a load
// of stride s, a broadcast load, a 64-bit and a 32-bit division.
const gatherStrided = header + `
.visible .entry gather_strided(.param .u64 a, .param .u64 c, .param .u32 s, .param .u32 n)
{
	.reg .pred %p<2>;
	.reg .b32 %r<9>;
	.reg .b64 %rd<12>;
	.reg .f32 %f<6>;
	ld.param.u64 %rd1, [a];
	ld.param.u64 %rd2, [c];
	ld.param.u32 %r6, [s];
	ld.param.u32 %r1, [n];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.s32 %r5, %r2, %r3, %r4;
	setp.ge.u32 %p1, %r5, %r1;
	@%p1 bra DONE;
	mul.lo.s32 %r7, %r5, %r6;
	mul.wide.u32 %rd3, %r7, 4;
	add.s64 %rd4, %rd1, %rd3;
	ld.global.f32 %f1, [%rd4];
	ld.global.f32 %f2, [%rd1];
	cvt.u64.u32 %rd5, %r5;
	cvt.u64.u32 %rd6, %r6;
	div.u64 %rd7, %rd5, %rd6;
	rem.u32 %r8, %r5, %r6;
	cvt.rn.f32.u64 %f3, %rd7;
	add.rn.f32 %f4, %f1, %f2;
	add.rn.f32 %f5, %f4, %f3;
	mul.wide.u32 %rd8, %r5, 4;
	add.s64 %rd9, %rd2, %rd8;
	st.global.f32 [%rd9], %f5;
DONE:
	ret;
}
`

// profiled runs f over n threads in blocks of 128 with the profiler on
// and returns the launch's profile.
func (e *env) profiled(f cu.Function, n int, args *cu.Args) Profile {
	e.t.Helper()
	var got []Profile
	e.ctx.(*Context).SetProfiler(func(p Profile) { got = append(got, p) })
	defer e.ctx.(*Context).SetProfiler(nil)
	if err := e.launch(f, (n+127)/128, 128, args); err != nil {
		e.t.Fatal(err)
	}
	if len(got) != 1 {
		e.t.Fatalf("%d profiles for one launch", len(got))
	}
	return got[0]
}

func TestProfileCountsWarpAccesses(t *testing.T) {
	e := newEnv(t)
	const n = 1000
	pa, pb, pc := e.upload(make([]float32, n)), e.upload(make([]float32, n)), e.upload(make([]float32, n))
	p := e.profiled(e.kernel(vecAdd, "vec_add"), n, new(cu.Args).Ptr(pa).Ptr(pb).Ptr(pc).U32(n))
	// 32 warps: 31 of 32 threads, the last of 8 (992..999 in range).
	want := Profile{Kernel: "vec_add", Grid: [3]int{8, 1, 1}, Block: [3]int{128, 1, 1}, Threads: 1024,
		Loads:    Access{Requests: 64, Sectors: 2 * (31*4 + 1), Least: 2 * (31*4 + 1), Bytes: 2 * 4 * n},
		Stores:   Access{Requests: 32, Sectors: 31*4 + 1, Least: 31*4 + 1, Bytes: 4 * n},
		Branches: 32, Divergent: 1}
	want.Instructions = p.Instructions
	if p != want {
		t.Errorf("profile\n %+v\nwant\n %+v", p, want)
	}
	// 24 threads leave at the branch (11 instructions with ret); 1000 run
	// all 22; the 4 parameter loads do not count.
	if p.Instructions != 24*7+1000*18 {
		t.Errorf("%d instructions, want %d", p.Instructions, 24*7+1000*18)
	}
	if e := p.Loads.Efficiency(); e != 1 {
		t.Errorf("coalesced loads are %.2f efficient, want 1", e)
	}
}

func TestProfileSeesStridesBroadcastsAndDivisions(t *testing.T) {
	e := newEnv(t)
	const n = 256
	for _, stride := range []int{1, 2, 8} {
		pa, pc := e.upload(make([]float32, n*stride)), e.upload(make([]float32, n))
		p := e.profiled(e.kernel(gatherStrided, "gather_strided"), n, new(cu.Args).Ptr(pa).Ptr(pc).U32(uint32(stride)).U32(n))
		// Per warp: the strided load touches min(32*stride*4/32, 32)
		// sectors for 4 useful; the broadcast one sector for one.
		strided := int64(min(4*stride, 32))
		want := Access{Requests: 16, Sectors: 8 * (strided + 1), Least: 8 * (4 + 1), Bytes: 2 * 4 * n}
		if p.Loads != want {
			t.Errorf("stride %d: loads %+v, want %+v", stride, p.Loads, want)
		}
		if want := float64(5) / float64(strided+1); p.Loads.Efficiency() != want {
			t.Errorf("stride %d: load efficiency %.3f, want %.3f", stride, p.Loads.Efficiency(), want)
		}
		if p.Div64 != n || p.Div32 != n {
			t.Errorf("stride %d: %d 64-bit and %d 32-bit divisions, want %d each", stride, p.Div64, p.Div32, n)
		}
		if p.Divergent != 0 || p.Branches != 8 {
			t.Errorf("stride %d: %d of %d branches divergent, want 0 of 8", stride, p.Divergent, p.Branches)
		}
		if s := p.String(); !strings.Contains(s, "gather_strided") || !strings.Contains(s, "div/rem 1.0 64-bit 1.0 32-bit") {
			t.Errorf("String() = %q", s)
		}
	}
}

func TestProfilerOffCountsNothing(t *testing.T) {
	e := newEnv(t)
	pa := e.upload(make([]float32, 64))
	called := false
	e.ctx.(*Context).SetProfiler(func(Profile) { called = true })
	e.ctx.(*Context).SetProfiler(nil)
	if err := e.launch(e.kernel(vecAdd, "vec_add"), 1, 64, new(cu.Args).Ptr(pa).Ptr(pa).Ptr(pa).U32(64)); err != nil {
		t.Fatal(err)
	}
	if called {
		t.Error("a profiler set to nil was called")
	}
}
