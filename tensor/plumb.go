package tensor

import (
	"sync/atomic"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/plumb"
)

// assignments counts the in-place assignments of every variable in the
// process (plumb.Tensor.Bump).
var assignments atomic.Uint64

// The setters packages tape and trace use, and the printer's pieces the
// notebook module uses, lent through internal/plumb rather than exported.

func init() {
	plumb.Tensor.SetFlags = func(t any, f uint32) { t.(*Tensor).setFlags(f) }
	plumb.Tensor.SetAutodiff = func(t, a any) { t.(*Tensor).setAutodiff(a.(*Autodiff)) }
	plumb.Tensor.CompareAndSwapAutodiff = func(t, old, a any) bool {
		return t.(*Tensor).ad.CompareAndSwap(old.(*Autodiff), a.(*Autodiff))
	}
	plumb.Tensor.SetTraced = func(t, m any) { t.(*Tensor).setTraced(m.(*Traced)) }
	plumb.Tensor.WithoutValues = func(t any) any { return t.(*Tensor).withoutValues() }
	plumb.Tensor.Move = func(t, dev any) (any, error) { return t.(*Tensor).move(dev.(device.Device)) }
	plumb.Tensor.RowMajor = func(t any) any { return t.(*Tensor).rowMajor() }
	plumb.Tensor.Item = func(t any) any { return t.(*Tensor).item() }
	plumb.Tensor.Copy = func(t any) any { return t.(*Tensor).copyRowMajor() }
	plumb.Tensor.Version = func(t any) uint64 { return t.(*Tensor).version.Load() }
	plumb.Tensor.Bump = func(t any) { t.(*Tensor).version.Store(assignments.Add(1)) }
	plumb.Tensor.Assignments = func() uint64 { return assignments.Load() }
	plumb.Tensor.MarkScratch = func(x any) any {
		if t := x.(*Tensor); t.Traced() == nil {
			t.setFlags(plumb.FlagScratch)
		}
		return x
	}
	plumb.Tensor.Print = func(x any) ([]string, func(int) []int) {
		t := x.(*Tensor)
		p := printer{summarize: t != nil && t.NumElements() > printThreshold}
		if t == nil || t.buf == nil || t.ValuesDropped() {
			return nil, p.indices
		}
		p.shape = t.shape
		if len(t.shape) == 0 {
			return t.elementStrings(-1, nil, false), p.indices
		}
		return t.elementStrings(-1, p.shownFlat(), false), p.indices
	}
}
