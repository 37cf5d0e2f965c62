package nn

import (
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Mixed precision, as Keras' mixed_bfloat16 and mixed_float16 policies and
// torch.autocast have it: the variables stay float32 (the master copy the
// optimizer updates), the layers compute in a half type, and the loss is
// computed in float32.
//
// The layers compute in their input's float dtype: given a BFloat16 or
// Float16 input, Dense, Conv2D, the recurrent cells and the norms cast
// their float32 variables to it (a Cast the tape differentiates, so the
// gradients arrive at the variables in float32), and the norms compute
// their statistics in float32. A Sequential with a Policy casts each
// layer's float input to the policy's compute dtype and its own output to
// float32; the losses take half predictions and compute in float32. For
// float16, whose range is narrow, wrap the optimizer in a
// LossScaleOptimizer.
//
// The casts cost no kernel a step: a variable's cast to a half type is
// kept while the variable is unchanged (ops.Cast), TrainStep asks its
// tape for the weights' gradients in the half type
// (tape.Options.HalfGradients) where the optimizer is nn's own (or a
// LossScaleOptimizer over one, whose unscaling is then the step's), and
// on a GPU the optimizer's one launch widens them, updates the float32
// variables and writes their half copies for the next forward pass. The
// variables move to the bit as through the casts. LayerNorm, RMSNorm and
// BatchNorm (training) give their ops the half x with their float32
// parameters (computed in float32, rounded once), without casts around
// them.

// Policy is a mixed-precision policy: the dtype layers compute in. Its
// zero value is no policy (layers compute in their input's dtype).
type Policy struct {
	Compute tensor.DType
}

// The policies.
var (
	Float32Policy = Policy{Compute: tensor.Float32}
	MixedBFloat16 = Policy{Compute: tensor.BFloat16} // Keras' mixed_bfloat16
	MixedFloat16  = Policy{Compute: tensor.Float16}  // Keras' mixed_float16: use a LossScaleOptimizer
)

func (p Policy) String() string {
	switch p.Compute {
	case tensor.Invalid:
		return "none"
	case tensor.BFloat16:
		return "mixed_bfloat16"
	case tensor.Float16:
		return "mixed_float16"
	}
	return p.Compute.String()
}

// castFloat returns x cast to dt when x is of another float dtype (integer
// and bool tensors, ids and masks, pass as they are).
func castFloat(x *tensor.Tensor, dt tensor.DType) *tensor.Tensor {
	if dt == tensor.Invalid || !x.DType().IsFloat() || x.DType() == dt {
		return x
	}
	return ops.Cast(x, dt)
}

// valueAs is v's value in x's float dtype: cast where x is of another
// float dtype (a half input to a layer of float32 variables).
func valueAs(v *tape.Variable, x *tensor.Tensor) *tensor.Tensor {
	return castFloat(v.Value(), x.DType())
}

// halfWithFloat32 reports whether x is of a half type and v float32: a
// mixed-precision norm, whose op takes the half x with the float32
// parameters as they are (ops.LayerNorm, ops.RMSNorm), computing in
// float32 and rounding its result once, without casts around it.
func halfWithFloat32(x *tensor.Tensor, v *tape.Variable) bool {
	return x.DType().IsHalf() && v.Value().DType() == tensor.Float32
}

// inFloat32 runs f on x widened to float32 where x is of a half type, and
// returns its result in x's dtype: the norms compute so where their
// parameters are not float32, and BatchNorm in inference.
func inFloat32(x *tensor.Tensor, f func(x *tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
	if !x.DType().IsHalf() {
		return f(x)
	}
	return ops.Cast(f(ops.Cast(x, tensor.Float32)), x.DType())
}
