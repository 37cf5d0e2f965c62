package tensor

import "github.com/eagerflow/eagerflow/internal/plumb"

// The setters packages tape and trace use, lent through internal/plumb
// rather than exported.
func init() {
	plumb.Tensor.SetFlags = func(t any, f uint32) { t.(*Tensor).setFlags(f) }
	plumb.Tensor.SetAutodiff = func(t, a any) { t.(*Tensor).setAutodiff(a.(*Autodiff)) }
	plumb.Tensor.CompareAndSwapAutodiff = func(t, old, a any) bool {
		return t.(*Tensor).ad.CompareAndSwap(old.(*Autodiff), a.(*Autodiff))
	}
	plumb.Tensor.SetTraced = func(t, m any) { t.(*Tensor).setTraced(m.(*Traced)) }
	plumb.Tensor.WithoutValues = func(t any) any { return t.(*Tensor).withoutValues() }
}
