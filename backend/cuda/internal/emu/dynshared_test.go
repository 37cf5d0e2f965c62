package emu

import (
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// reverse has each of a block's threads store its index in the dynamic
// shared array dyn, a word at off + 4·tid (off a parameter), the first 25
// threads a word each of the static array st too (an overlap would be a
// race), and, after a barrier, write the word of the thread across the
// block to out: out[i] = n-1-i.
const reverse = header + `
.extern .shared .align 16 .b8 dyn[];

.visible .entry reverse(.param .u64 out, .param .u64 off)
{
	.reg .pred %p<2>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<10>;
	.reg .f32 %f<2>;
	.shared .align 4 .b8 st[100];
	ld.param.u64 %rd1, [out];
	ld.param.u64 %rd2, [off];
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ntid.x;
	mov.u64 %rd3, dyn;
	add.s64 %rd3, %rd3, %rd2;
	mul.wide.u32 %rd4, %r1, 4;
	add.s64 %rd5, %rd3, %rd4;
	st.shared.u32 [%rd5], %r1;
	setp.lt.u32 %p1, %r1, 25;
	mov.u64 %rd6, st;
	add.s64 %rd6, %rd6, %rd4;
	@%p1 st.shared.u32 [%rd6], %r2;
	bar.sync 0;
	sub.s32 %r3, %r2, %r1;
	sub.s32 %r3, %r3, 1;
	mul.wide.u32 %rd6, %r3, 4;
	add.s64 %rd7, %rd3, %rd6;
	ld.shared.u32 %r4, [%rd7];
	cvt.rn.f32.u32 %f1, %r4;
	cvta.to.global.u64 %rd8, %rd1;
	add.s64 %rd9, %rd8, %rd4;
	st.global.f32 [%rd9], %f1;
	ret;
}
`

// A module's .extern .shared array is dynamic shared memory: it starts
// past the kernel's static arrays and holds what a launch gives it (up
// to 48 KB with the static bytes, or the limit SetMaxDynamicShared
// raises, which stops at the device's 227 KB); a launch that gives more,
// a kernel without such an array given some, an access past the bytes
// given and a second such array are refused.
func TestDynamicSharedMemory(t *testing.T) {
	e := newEnv(t)
	f := e.kernel(reverse, "reverse")
	run := func(threads, shared int, off uint64) ([]float32, error) {
		out := e.upload(make([]float32, threads))
		err := e.ctx.Do(func() error {
			if err := e.ctx.Launch(f, cu.Dim3{X: 1, Y: 1, Z: 1}, cu.Dim3{X: threads, Y: 1, Z: 1}, shared, e.s, new(cu.Args).Ptr(out).U64(off)); err != nil {
				return err
			}
			return e.ctx.StreamSynchronize(e.s)
		})
		if err != nil {
			return nil, err
		}
		return e.download(out, threads)
	}
	check := func(got []float32, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if want := float32(len(got) - 1 - i); v != want {
				t.Fatalf("out[%d] = %v, want %v", i, v, want)
			}
		}
	}
	check(run(256, 1024, 0))
	// 60 KB: past the default limit until it is raised; then the words
	// at its end.
	const big = 60 << 10
	_, err := run(256, big, big-1024)
	expect(t, err, cu.ErrorInvalidValue, "beyond its limit")
	sz := e.ctx.(cu.SharedSizer)
	e.do(func() error { return sz.SetMaxDynamicShared(f, big) })
	check(run(256, big, big-1024))
	err = e.ctx.Do(func() error { return sz.SetMaxDynamicShared(f, 228<<10) })
	expect(t, err, cu.ErrorInvalidValue, "beyond the device's")

	plain := e.kernel(vecAdd, "vec_add")
	err = e.ctx.Do(func() error {
		return e.ctx.Launch(plain, cu.Dim3{X: 1, Y: 1, Z: 1}, cu.Dim3{X: 32, Y: 1, Z: 1}, 64, e.s, new(cu.Args).Ptr(0).Ptr(0).Ptr(0).U32(0))
	})
	expect(t, err, cu.ErrorInvalidValue, "declares no .extern .shared array")
	err = e.ctx.Do(func() error {
		_, err := e.ctx.ModuleLoad(strings.Replace(reverse, ".extern .shared .align 16 .b8 dyn[];", ".extern .shared .align 16 .b8 dyn[];\n.extern .shared .align 16 .b8 more[];", 1))
		return err
	})
	expect(t, err, cu.ErrorInvalidPTX, "a second dynamic shared array")
	_, err = run(256, 1024, 4) // the last thread's word past the array (a fault: the context's last call)
	expect(t, err, cu.ErrorIllegalAddress, "shared access out of bounds")
}

// A kernel's .maxntid directive (one to three dimensions) bounds its
// blocks: a launch of a block of more threads is refused, as the driver
// refuses it; a malformed directive fails the module's load.
func TestMaxThreadsDirective(t *testing.T) {
	e := newEnv(t)
	capped := strings.Replace(reverse, "(.param .u64 out, .param .u64 off)", "(.param .u64 out, .param .u64 off)\n.maxntid 32, 2", 1)
	f := e.kernel(capped, "reverse")
	launch := func(threads int) error {
		out := e.upload(make([]float32, threads))
		return e.ctx.Do(func() error {
			if err := e.ctx.Launch(f, cu.Dim3{X: 1, Y: 1, Z: 1}, cu.Dim3{X: threads, Y: 1, Z: 1}, 4*threads, e.s, new(cu.Args).Ptr(out).U64(0)); err != nil {
				return err
			}
			return e.ctx.StreamSynchronize(e.s)
		})
	}
	if err := launch(64); err != nil {
		t.Fatalf("a block of 64 under .maxntid 32, 2: %v", err)
	}
	if err := launch(65); err == nil || !strings.Contains(err.Error(), "maxntid") {
		t.Errorf("a block of 65 under .maxntid 32, 2: %v, want a refusal naming .maxntid", err)
	}
	for _, bad := range []string{".maxntid 0", ".maxntid 4, x", ".maxntid 1, 1, 1, 1"} {
		src := strings.Replace(reverse, "(.param .u64 out, .param .u64 off)", "(.param .u64 out, .param .u64 off)\n"+bad, 1)
		if _, err := parseModule(src); err == nil || !strings.Contains(err.Error(), "maxntid") {
			t.Errorf("%s: %v, want an error naming .maxntid", bad, err)
		}
	}
}
