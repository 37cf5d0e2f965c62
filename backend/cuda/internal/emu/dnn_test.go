package emu

import (
	"errors"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// The emulated cuDNN holds callers to cuDNN's contracts: a convolution it
// would refuse, an algorithm it did not plan, a workspace smaller than
// planned, a buffer smaller than the shapes say.
func TestEmulatedCuDNNContracts(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx.(*Context)
	cv := cu.Conv{Type: cu.Float32, N: 1, C: 2, H: 4, W: 4, K: 3, R: 3, S: 3, PadH: 1, PadW: 1, StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1}
	var plan cu.ConvPlan
	e.do(func() (err error) { plan, err = ctx.PlanConv(cv, cu.ConvForward); return })
	if plan.Workspace <= 0 {
		t.Fatalf("plan %+v: the emulation asks for a workspace", plan)
	}
	bad := cv
	bad.K = 0
	err := ctx.Do(func() error { _, err := ctx.PlanConv(bad, cu.ConvForward); return err })
	var ce *cu.Error
	if !errors.As(err, &ce) || ce.Name != "CUDNN_STATUS_BAD_PARAM" {
		t.Errorf("planning a convolution of no filters: %v", err)
	}
	nx, nw, ny := cv.Elements()
	x, w, y := e.upload(make([]float32, nx)), e.upload(make([]float32, nw)), e.upload(make([]float32, ny))
	ws := e.upload(make([]float32, plan.Workspace/4))
	for _, c := range []struct {
		what string
		plan cu.ConvPlan
		y    cu.Ptr
		want string
	}{
		{"another algorithm", cu.ConvPlan{Algo: 0, Workspace: plan.Workspace}, y, "was not planned"},
		{"a small workspace", cu.ConvPlan{Algo: plan.Algo, Workspace: plan.Workspace - 4}, y, "the algorithm needs"},
		{"a small output", plan, e.upload(make([]float32, ny-1)), "past the end"},
	} {
		err := ctx.Do(func() error { return ctx.Conv(e.s, cv, cu.ConvForward, c.plan, x, w, c.y, ws) })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.what, err, c.want)
		}
	}
	before := ctx.DNNCalls
	e.do(func() error {
		if err := ctx.Conv(e.s, cv, cu.ConvForward, plan, x, w, y, ws); err != nil {
			return err
		}
		return ctx.StreamSynchronize(e.s)
	})
	if ctx.DNNCalls != before+1 {
		t.Errorf("%d passes ran, want 1", ctx.DNNCalls-before)
	}
}
