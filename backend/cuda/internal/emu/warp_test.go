package emu

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// warpSum adds the lanes' values (lane id + 1, as floats) by a butterfly
// of shfl.sync and stores each lane's total; with early set, lanes 16 and
// up leave before the shuffles.
func warpSum(mode string, early bool) string {
	exit := ""
	if early {
		exit = "\tsetp.ge.u32 %p1, %r1, 16;\n\t@%p1 bra DONE;\n"
	}
	shuffles := ""
	for _, off := range []string{"16", "8", "4", "2", "1"} {
		shuffles += "\tshfl.sync." + mode + ".b32 %r3, %r2, " + off + ", 31, 0xffffffff;\n" +
			"\tmov.b32 %f2, %r3;\n\tmov.b32 %f1, %r2;\n\tadd.rn.f32 %f1, %f1, %f2;\n\tmov.b32 %r2, %f1;\n"
	}
	return header + `
.visible .entry warp_sum(.param .u64 out)
{
	.reg .pred %p<2>;
	.reg .b32 %r<5>;
	.reg .b64 %rd<5>;
	.reg .f32 %f<3>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %laneid;
	add.u32 %r4, %r1, 1;
	cvt.rn.f32.u32 %f1, %r4;
	mov.b32 %r2, %f1;
` + exit + shuffles + `	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.b32 [%rd3], %r2;
DONE:
	ret;
}
`
}

func TestShuffleSumsAWarp(t *testing.T) {
	e := newEnv(t)
	out := e.upload(make([]float32, 32))
	if err := e.launch(e.kernel(warpSum("bfly", false), "warp_sum"), 1, 32, new(cu.Args).Ptr(out)); err != nil {
		t.Fatal(err)
	}
	got, err := e.download(out, 32)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != 528 { // 1 + 2 + ... + 32
			t.Fatalf("lane %d holds %v after the butterfly, want 528", i, v)
		}
	}
	// down: lane 0 gathers the total (the others add lanes past the warp's
	// end, which give their own values).
	out = e.upload(make([]float32, 32))
	if err := e.launch(e.kernel(warpSum("down", false), "warp_sum"), 1, 32, new(cu.Args).Ptr(out)); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.download(out, 32); got[0] != 528 {
		t.Errorf("lane 0 holds %v after shfl.down, want 528", got[0])
	}
}

func TestShuffleFaults(t *testing.T) {
	e := newEnv(t)
	out := e.upload(make([]float32, 32))
	err := e.launch(e.kernel(warpSum("bfly", true), "warp_sum"), 1, 32, new(cu.Args).Ptr(out))
	if err == nil || !strings.Contains(err.Error(), "have exited") {
		t.Errorf("lanes leaving before a full-warp shfl: %v", err)
	}
	e = newEnv(t)
	out = e.upload(make([]float32, 32))
	err = e.launch(e.kernel(strings.ReplaceAll(warpSum("bfly", false), "0xffffffff", "0xffff"), "warp_sum"), 1, 32, new(cu.Args).Ptr(out))
	if err == nil || !strings.Contains(err.Error(), "member mask") {
		t.Errorf("a member mask of half the warp: %v", err)
	}
}

// vecCopy copies 4 floats a thread with 16-byte vector accesses; offset
// shifts the source by that many bytes (a misaligned vector).
func vecCopy(offset int) string {
	return header + `
.visible .entry vec_copy(.param .u64 dst, .param .u64 src)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<6>;
	.reg .f32 %f<5>;
	ld.param.u64 %rd1, [dst];
	ld.param.u64 %rd2, [src];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd3, %r1, 16;
	add.s64 %rd4, %rd2, %rd3;
	ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4+` + fmt.Sprint(offset) + `];
	add.s64 %rd5, %rd1, %rd3;
	st.global.v4.f32 [%rd5], {%f4, %f3, %f2, %f1};
	ret;
}
`
}

func TestVectorAccesses(t *testing.T) {
	e := newEnv(t)
	src := make([]float32, 128+4)
	for i := range src {
		src[i] = float32(i)
	}
	ps, pd := e.upload(src), e.upload(make([]float32, 128))
	var profs []Profile
	e.ctx.(*Context).SetProfiler(func(p Profile) { profs = append(profs, p) })
	if err := e.launch(e.kernel(vecCopy(0), "vec_copy"), 1, 32, new(cu.Args).Ptr(pd).Ptr(ps)); err != nil {
		t.Fatal(err)
	}
	e.ctx.(*Context).SetProfiler(nil)
	got, err := e.download(pd, 128)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 32 { // each thread's four, reversed
		for j := range 4 {
			if w := float32(4*i + 3 - j); got[4*i+j] != w {
				t.Fatalf("dst[%d] = %v, want %v", 4*i+j, got[4*i+j], w)
			}
		}
	}
	if p := profs[0]; p.Loads != (Access{Requests: 1, Sectors: 16, Least: 16, Bytes: 512}) || p.Stores.Sectors != 16 {
		t.Errorf("a warp's 16-byte accesses: loads %+v, stores %+v; want one request of 16 sectors each", p.Loads, p.Stores)
	}
	err = e.launch(e.kernel(vecCopy(4), "vec_copy"), 1, 32, new(cu.Args).Ptr(pd).Ptr(ps))
	if err == nil || !strings.Contains(err.Error(), "misaligned 16-byte vector load") {
		t.Errorf("a vector load 4 bytes off its alignment: %v", err)
	}
}

// atom.global.min keeps the least value any thread offers and gives each
// its predecessor; here the threads offer 100 - tid, so the last wins.
func TestAtomicMin(t *testing.T) {
	e := newEnv(t)
	const src = header + `
.visible .entry least(.param .u64 slot)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [slot];
	mov.u32 %r1, %tid.x;
	sub.u32 %r2, 100, %r1;
	cvt.u64.u32 %rd2, %r2;
	atom.global.min.u64 %rd3, [%rd1], %rd2;
	ret;
}
`
	p := e.upload([]float32{0, 0})
	e.do(func() error { return e.ctx.MemsetD32(p, 0xffffffff, 2, e.s) })
	if err := e.launch(e.kernel(src, "least"), 1, 64, new(cu.Args).Ptr(p)); err != nil {
		t.Fatal(err)
	}
	var host []byte
	e.do(func() (err error) {
		if host, err = e.ctx.MemAllocHost(8); err != nil {
			return err
		}
		if err := e.ctx.MemcpyDtoH(host, p, e.s); err != nil {
			return err
		}
		return e.ctx.StreamSynchronize(e.s)
	})
	if got := binary.LittleEndian.Uint64(host); got != 100-63 {
		t.Errorf("the slot holds %d, want %d", got, 100-63)
	}
}

// runsKernel writes 1 to c[r·64 + i] for each of two runs r and i < 36,
// the warp's 32 lanes in turn (lanes 0-3 take two turns a run, the rest
// one), then sync after each run.
func runsKernel(sync string) string {
	return header + `
.visible .entry runs(.param .u64 c)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	.reg .f32 %f<2>;
	ld.param.u64 %rd1, [c];
	mov.f32 %f1, 0f3F800000;
	mov.u32 %r1, 0;
RUN:
	mov.u32 %r2, %tid.x;
TURN:
	setp.ge.u32 %p1, %r2, 36;
	@%p1 bra RUN_DONE;
	mad.lo.u32 %r3, %r1, 64, %r2;
	mul.wide.u32 %rd2, %r3, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.f32 [%rd3], %f1;
	add.u32 %r2, %r2, 32;
	bra.uni TURN;
RUN_DONE:
	` + sync + `
	add.u32 %r1, %r1, 1;
	setp.lt.u32 %p1, %r1, 2;
	@%p1 bra RUN;
	ret;
}
`
}

// A warp whose lanes leave a loop at different turns reconverges at a
// bar.warp.sync: the profile pairs the next run's accesses afresh, as the
// hardware issues them; without it, lane 4's first store of the second
// run is paired with lane 0's second of the first, and the pair touches
// a sector more than its bytes fill. Lanes that do not all
// reach the sync fault, as shfl.sync's do.
func TestWarpSyncReconverges(t *testing.T) {
	for _, c := range []struct {
		sync    string
		sectors int64
	}{
		{"bar.warp.sync 0xffffffff;", 2 * (4 + 1)}, // a run: 32 floats, then 4
		{"", 2*(4+1) + 1},                          // c[32..35] with c[68..95]: 5 sectors for 4
	} {
		e := newEnv(t)
		out := e.upload(make([]float32, 128))
		var got []Profile
		e.ctx.(*Context).SetProfiler(func(p Profile) { got = append(got, p) })
		if err := e.launch(e.kernel(runsKernel(c.sync), "runs"), 1, 32, new(cu.Args).Ptr(out)); err != nil {
			t.Fatal(err)
		}
		e.ctx.(*Context).SetProfiler(nil)
		if len(got) != 1 || got[0].Stores.Requests != 4 || got[0].Stores.Sectors != c.sectors || got[0].Stores.Least != 2*(4+1) {
			t.Fatalf("sync %q: stores %+v, want 4 requests touching %d sectors for 10", c.sync, got, c.sectors)
		}
		vals, _ := e.download(out, 128)
		for i, v := range vals {
			if want := float32(boolToFloat(i%64 < 36)); v != want {
				t.Fatalf("sync %q: c[%d] = %v, want %v", c.sync, i, v, want)
			}
		}
	}
	e := newEnv(t)
	out := e.upload(make([]float32, 128))
	k := strings.Replace(runsKernel("bar.warp.sync 0xffffffff;"), "@%p1 bra RUN_DONE;", "@%p1 bra RUN_DONE;\n\tsetp.eq.u32 %p1, %r2, 3;\n\t@%p1 ret;", 1)
	if err := e.launch(e.kernel(k, "runs"), 1, 32, new(cu.Args).Ptr(out)); err == nil || !strings.Contains(err.Error(), "bar.warp.sync") {
		t.Errorf("a lane leaving before a full-warp bar.warp.sync: %v", err)
	}
}

func boolToFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Every lane gets the ballot of the warp's predicates.
func TestBallotGathersTheLanesPredicates(t *testing.T) {
	src := header + `
.visible .entry ballot(.param .u64 out)
{
	.reg .pred %p<2>;
	.reg .b32 %r<5>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %laneid;
	rem.u32 %r2, %r1, 3;
	setp.eq.u32 %p1, %r2, 0;
	vote.sync.ballot.b32 %r3, %p1, 0xffffffff;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.b32 [%rd3], %r3;
	ret;
}
`
	want := uint32(0)
	for l := 0; l < 32; l += 3 {
		want |= 1 << l
	}
	for l, v := range newEnv(t).words(src, "ballot", false, 32, 32) {
		if v != want {
			t.Fatalf("lane %d got %#x, want %#x", l, v, want)
		}
	}
}
