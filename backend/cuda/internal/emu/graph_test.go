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
