package tape

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// CustomGradient wraps fn so that tapes differentiate it with grad instead
// of looking inside. fn runs on untracked copies of its inputs, so nothing
// it does is recorded; grad receives the inputs, the outputs and the
// gradients of the outputs, and returns one gradient per input (nil for
// none). Variables fn uses must be among its inputs to get gradients.
func CustomGradient(fn func(xs []*tensor.Tensor) []*tensor.Tensor,
	grad func(xs, ys, dys []*tensor.Tensor) []*tensor.Tensor) func(xs ...*tensor.Tensor) []*tensor.Tensor {
	if fn == nil || grad == nil {
		panic(tensor.NewError("tape", "CustomGradient", tensor.ErrAttr, nil, "", "fn and grad must not be nil (fn nil: %v, grad nil: %v)", fn == nil, grad == nil))
	}
	return func(xs ...*tensor.Tensor) []*tensor.Tensor {
		needAll("CustomGradient", "input", xs)
		plain := make([]*tensor.Tensor, len(xs))
		needs := false
		for i, x := range xs {
			plain[i] = ops.StopGradient(x)
			needs = needs || tracked(x)
		}
		ys := fn(plain)
		if !needs {
			return ys
		}
		var outs []*tensor.Tensor
		outs = recordRegion(xs, ys, func(dys []*tensor.Tensor) []*tensor.Tensor {
			for i, d := range dys {
				if d == nil {
					dys[i] = ops.ZerosLike(outs[i])
				}
			}
			return grad(xs, outs, dys)
		}, nil, false)
		return outs
	}
}

// Jacobian returns d target / d source with shape target.Shape() followed
// by source.Shape(), built one row per target element. The tape must be
// persistent, or it is used up by this call.
func (t *Tape) Jacobian(target, source *tensor.Tensor) *tensor.Tensor {
	t.claim("Jacobian", target, source)
	defer t.answered.Store(true)
	n := target.NumElements()
	rows := make([]*tensor.Tensor, 0, n)
	for i := 0; i < n; i++ {
		seed := make([]float64, n)
		seed[i] = 1
		s := ops.Cast(onDevice(tensor.FromSlice(seed, target.Shape()...), target.Device()), target.DType())
		g := t.gradient(target, s, []*tensor.Tensor{source}, nil)[0]
		if g == nil {
			g = ops.ZerosLike(source)
		}
		rows = append(rows, ops.Reshape(g, 1, source.NumElements()))
	}
	shape := append(target.Shape().Clone(), source.Shape()...)
	if n == 0 {
		return tensor.FullOn(source.Device(), source.DType(), 0, shape...)
	}
	return ops.Reshape(ops.Concatenate(0, rows...), shape...)
}

// onDevice is x moved to dev (x itself when it is there).
func onDevice(x *tensor.Tensor, dev device.Device) *tensor.Tensor {
	y, err := x.To(dev)
	if err != nil {
		panic(tensor.NewError("tape", "Jacobian", err, []*tensor.Tensor{x}, "", "moving the seed to %s: %v", dev.Name(), err))
	}
	return y
}
