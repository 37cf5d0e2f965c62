package emu

import (
	"errors"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// A captured launch runs only when its graph is launched, and each launch
// runs it again on what the buffers hold then; a wait during a capture
// fails and invalidates it.
func TestCaptureAndReplay(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx.(*Context)
	const n = 64
	a, b, c := e.upload(make([]float32, n)), e.upload(make([]float32, n)), e.upload(make([]float32, n))
	f := e.kernel(vecAdd, "vec_add")
	var g cu.GraphExec
	e.do(func() error {
		if err := ctx.BeginCapture(e.s); err != nil {
			return err
		}
		if err := ctx.Launch(f, cu.Dim3{X: 1, Y: 1, Z: 1}, cu.Dim3{X: n, Y: 1, Z: 1}, 0, e.s, new(cu.Args).Ptr(a).Ptr(b).Ptr(c).U32(n)); err != nil {
			return err
		}
		var err error
		g, err = ctx.EndCapture(e.s)
		return err
	})
	if ctx.Launches != 0 {
		t.Fatalf("a captured launch ran (%d launches)", ctx.Launches)
	}
	for round := 1; round <= 2; round++ {
		va, vb := make([]float32, n), make([]float32, n)
		for i := range va {
			va[i], vb[i] = float32(i*round), float32(100*round)
		}
		a2, b2 := e.upload(va), e.upload(vb)
		e.do(func() error { // new inputs into the captured buffers
			if err := ctx.MemcpyDtoD(a, a2, 4*n, e.s); err != nil {
				return err
			}
			if err := ctx.MemcpyDtoD(b, b2, 4*n, e.s); err != nil {
				return err
			}
			if err := ctx.GraphLaunch(g, e.s); err != nil {
				return err
			}
			return ctx.StreamSynchronize(e.s)
		})
		got, err := e.download(c, n)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got {
			if v != va[i]+vb[i] {
				t.Fatalf("round %d: c[%d] = %v, want %v", round, i, v, va[i]+vb[i])
			}
		}
	}
	if ctx.GraphLaunches != 2 || ctx.Launches != 2 {
		t.Errorf("%d graph launches, %d kernel runs; want 2 and 2", ctx.GraphLaunches, ctx.Launches)
	}
	// A wait while capturing.
	err := ctx.Do(func() error {
		if err := ctx.BeginCapture(e.s); err != nil {
			return err
		}
		var ce *cu.Error
		if err := ctx.StreamSynchronize(e.s); !errors.As(err, &ce) || ce.Code != cu.ErrorCaptureUnsupported {
			t.Errorf("a wait during a capture: %v", err)
		}
		_, err := ctx.EndCapture(e.s)
		return err
	})
	var ce *cu.Error
	if !errors.As(err, &ce) || ce.Code != cu.ErrorCaptureInvalidated {
		t.Errorf("ending an invalidated capture: %v", err)
	}
	e.do(func() error { return ctx.GraphDestroy(g) })
}

// graphKernels: inc adds 1 to x[0]; lt sets the byte p[0] to x[0] < limit;
// set sets a graph's condition h from the byte p[0], xor negate, through
// the device function.
const graphKernels = `
.version 8.0
.target sm_75
.address_size 64

.extern .func cudaGraphSetConditional (.param .b64 h, .param .b32 v);

.visible .entry inc(.param .u64 x)
{
	.reg .f32 %f<3>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [x];
	cvta.to.global.u64 %rd2, %rd1;
	ld.global.f32 %f1, [%rd2];
	add.f32 %f2, %f1, 0f3F800000;
	st.global.f32 [%rd2], %f2;
	ret;
}

.visible .entry lt(.param .u64 x, .param .u64 p, .param .f32 limit)
{
	.reg .pred %p<2>;
	.reg .f32 %f<3>;
	.reg .b32 %r<2>;
	.reg .b64 %rd<5>;
	ld.param.u64 %rd1, [x];
	ld.param.u64 %rd2, [p];
	ld.param.f32 %f2, [limit];
	cvta.to.global.u64 %rd3, %rd1;
	cvta.to.global.u64 %rd4, %rd2;
	ld.global.f32 %f1, [%rd3];
	setp.lt.f32 %p1, %f1, %f2;
	selp.u32 %r1, 1, 0, %p1;
	st.global.u8 [%rd4], %r1;
	ret;
}

.visible .entry set(.param .u64 h, .param .u64 p, .param .u32 negate)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<4>;
	.param .b64 call_h;
	.param .b32 call_v;
	ld.param.u64 %rd1, [h];
	ld.param.u64 %rd2, [p];
	ld.param.u32 %r2, [negate];
	cvta.to.global.u64 %rd3, %rd2;
	ld.global.u8 %r1, [%rd3];
	xor.b32 %r1, %r1, %r2;
	st.param.b64 [call_h], %rd1;
	st.param.b32 [call_v], %r1;
	call.uni cudaGraphSetConditional, (call_h, call_v);
	ret;
}
`

// graphEnv is an env with the graph kernels, x (a float32) and p (its
// predicate byte, in a float32's room).
type graphEnv struct {
	*env
	g           cu.GraphLoops
	inc, lt, st cu.Function
	x, p        cu.Ptr
}

func newGraphEnv(t *testing.T) *graphEnv {
	e := newEnv(t)
	g := &graphEnv{env: e, g: e.ctx.(cu.GraphLoops), x: e.upload([]float32{0}), p: e.upload([]float32{0})}
	g.inc, g.lt, g.st = e.kernel(graphKernels, "inc"), e.kernel(graphKernels, "lt"), e.kernel(graphKernels, "set")
	return g
}

// queue launches f on the stream, capturing or not, without waiting.
func (g *graphEnv) queue(f cu.Function, args *cu.Args) {
	g.t.Helper()
	g.do(func() error {
		return g.ctx.Launch(f, cu.Dim3{X: 1, Y: 1, Z: 1}, cu.Dim3{X: 1, Y: 1, Z: 1}, 0, g.s, args)
	})
}

func (g *graphEnv) setCond(h cu.CondHandle, negate uint32) {
	g.queue(g.st, new(cu.Args).U64(uint64(h)).Ptr(g.p).U32(negate))
}

func (g *graphEnv) check(limit float32) { g.queue(g.lt, new(cu.Args).Ptr(g.x).Ptr(g.p).F32(limit)) }

// replay launches exec, waits, and returns x.
func (g *graphEnv) replay(exec cu.GraphExec) float32 {
	g.t.Helper()
	g.do(func() error {
		if err := g.g.GraphLaunch(exec, g.s); err != nil {
			return err
		}
		return g.ctx.StreamSynchronize(g.s)
	})
	x, err := g.download(g.x, 1)
	if err != nil {
		g.t.Fatal(err)
	}
	return x[0]
}

// A WHILE node runs its body while its condition, set by a kernel before
// it and at the end of each pass, holds; the condition starts each launch
// at 0; IF nodes on a predicate and its negation take one side each.
func TestConditionalNodes(t *testing.T) {
	g := newGraphEnv(t)
	ctx := g.ctx.(*Context)
	var loop, branch, other cu.CondHandle
	g.do(func() error { return g.g.BeginCapture(g.s) })
	g.do(func() (err error) { loop, err = g.g.NewCondition(g.s); return })
	g.check(5)
	g.setCond(loop, 0)
	g.do(func() error { return g.g.BeginWhile(g.s, loop) })
	g.queue(g.inc, new(cu.Args).Ptr(g.x))
	g.check(5)
	g.setCond(loop, 0)
	g.do(func() error { return g.g.EndBody(g.s) })
	// After the loop x is 5 when it started below: x < 8 holds, so the IF
	// on it adds one and the IF on its negation does not.
	g.do(func() (err error) { branch, err = g.g.NewCondition(g.s); return })
	g.do(func() (err error) { other, err = g.g.NewCondition(g.s); return })
	g.check(8)
	g.setCond(branch, 0)
	g.do(func() error { return g.g.BeginIf(g.s, branch) })
	g.queue(g.inc, new(cu.Args).Ptr(g.x))
	g.do(func() error { return g.g.EndBody(g.s) })
	g.setCond(other, 1)
	g.do(func() error { return g.g.BeginIf(g.s, other) })
	g.queue(g.inc, new(cu.Args).Ptr(g.x))
	g.queue(g.inc, new(cu.Args).Ptr(g.x))
	g.do(func() error { return g.g.EndBody(g.s) })
	var exec cu.GraphExec
	g.do(func() (err error) { exec, err = g.g.EndCapture(g.s); return })
	if x := g.replay(exec); x != 6 || ctx.LoopPasses != 5 || ctx.BranchesTaken != 1 {
		t.Errorf("first launch: x %v, %d passes, %d branches; want 6, 5, 1", x, ctx.LoopPasses, ctx.BranchesTaken)
	}
	// From 6: no pass; 6 < 8 still: one more.
	if x := g.replay(exec); x != 7 || ctx.LoopPasses != 5 || ctx.BranchesTaken != 2 {
		t.Errorf("second launch: x %v, %d passes, %d branches; want 7, 5, 2", x, ctx.LoopPasses, ctx.BranchesTaken)
	}
	// From 8: the negation's side, two more.
	g.do(func() error { return g.ctx.MemsetD32(g.x, 0x41000000, 1, g.s) }) // 8.0
	if x := g.replay(exec); x != 10 || ctx.BranchesTaken != 3 {
		t.Errorf("third launch: x %v, %d branches; want 10, 3", x, ctx.BranchesTaken)
	}
}

// The contracts: a wait inside a body invalidates the whole capture; a
// capture cannot end inside a body; a body needs a condition of the
// graph; the device function faults on a handle no graph made.
func TestConditionalNodeContracts(t *testing.T) {
	g := newGraphEnv(t)
	var h cu.CondHandle
	g.do(func() error { return g.g.BeginCapture(g.s) })
	g.do(func() (err error) { h, err = g.g.NewCondition(g.s); return })
	g.do(func() error { return g.g.BeginWhile(g.s, h) })
	var ce *cu.Error
	if err := g.ctx.Do(func() error { return g.ctx.StreamSynchronize(g.s) }); !errors.As(err, &ce) || ce.Code != cu.ErrorCaptureUnsupported {
		t.Errorf("a wait inside a body: %v", err)
	}
	g.do(func() error { return g.g.EndBody(g.s) })
	if err := g.ctx.Do(func() error { _, err := g.g.EndCapture(g.s); return err }); !errors.As(err, &ce) || ce.Code != cu.ErrorCaptureInvalidated {
		t.Errorf("a capture whose body waited: %v, want invalidated", err)
	}

	g.do(func() error { return g.g.BeginCapture(g.s) })
	g.do(func() (err error) { h, err = g.g.NewCondition(g.s); return })
	if err := g.ctx.Do(func() error { return g.g.BeginIf(g.s, h+1000) }); err == nil {
		t.Error("a body on a condition of no graph: no error")
	}
	g.do(func() error { return g.g.BeginIf(g.s, h) })
	if err := g.ctx.Do(func() error { _, err := g.g.EndCapture(g.s); return err }); err == nil {
		t.Error("a capture ended inside a body: no error")
	}
	if err := g.ctx.Do(func() error { return g.g.EndBody(g.s) }); err == nil {
		t.Error("EndBody with no capture: no error")
	}

	err := g.ctx.Do(func() error {
		if err := g.ctx.Launch(g.st, cu.Dim3{X: 1, Y: 1, Z: 1}, cu.Dim3{X: 1, Y: 1, Z: 1}, 0, g.s, new(cu.Args).U64(99999).Ptr(g.p).U32(0)); err != nil {
			return err
		}
		return g.ctx.StreamSynchronize(g.s)
	})
	if err == nil {
		t.Error("cudaGraphSetConditional on a handle no graph made: no fault")
	}
}
