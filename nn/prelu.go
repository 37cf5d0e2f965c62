package nn

import (
	"fmt"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// PReLU is the parametric rectifier layer (He et al. 2015; Keras' PReLU
// with its slope shared over the spatial axes, torch.nn.PReLU): x where
// x > 0, alpha·x elsewhere, alpha learned, one slope a feature or one for
// all (ops.Prelu).
type PReLU struct {
	Alpha *tape.Variable // [C], or [1] for one slope
	// Format says where an image's feature dimension is: last (NHWC, and
	// a dense layer's [N C]) or after the batch (NCHW).
	Format ops.DataFormat
}

// NewPReLU makes a PReLU of c slopes (1: one for every feature), each
// init (PyTorch's default is 0.25, Keras' 0), of dtype dt (Float32 where
// Invalid), over inputs whose features are where format says. Panics
// with a *tensor.Error for c < 1.
func NewPReLU(name string, c int, init float64, format ops.DataFormat, dt tensor.DType) *PReLU {
	if c < 1 {
		panic(tensor.NewError("nn", "NewPReLU", tensor.ErrValue, nil, "", "%d slopes: want at least 1", c))
	}
	return &PReLU{Alpha: tape.NewVariable(name+"/alpha", tensor.FullOf(orFloat32(dt), init, c)), Format: format}
}

// Forward is x where x > 0, alpha·x elsewhere: x [N, ..., C] (NHWC) or
// [N, C, ...] (NCHW) with C the slopes' count, or any shape for one
// slope; the slopes in x's dtype. A *tensor.Error names a count of
// features that is not the slopes'.
func (p *PReLU) Forward(x *tensor.Tensor) *tensor.Tensor {
	a := valueAs(p.Alpha, x)
	c := a.NumElements()
	if c == 1 {
		return ops.Prelu(x, ops.Reshape(a))
	}
	axis := x.Rank() - 1
	if p.Format == ops.NCHW {
		axis = 1
	}
	if x.Rank() < 2 || x.Dim(axis) != c {
		panic(tensor.NewError("nn", "PReLU", tensor.ErrShape, []*tensor.Tensor{x, a}, "",
			"input %v has no feature dimension of the %d slopes (%v)", x.Shape(), c, p.Format))
	}
	shape := make([]int, x.Rank()-axis)
	for i := range shape {
		shape[i] = 1
	}
	shape[0] = c
	return ops.Prelu(x, ops.Reshape(a, shape...))
}

// Variables returns Alpha.
func (p *PReLU) Variables() []*tape.Variable { return []*tape.Variable{p.Alpha} }

func (p *PReLU) String() string {
	return joinParts("PReLU", layerName(p), fmt.Sprintf("%d slopes", p.Alpha.Value().NumElements()), formatText(p.Format))
}
