package nn

import (
	"math"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Initializer makes a variable's first value of a shape and dtype. The
// seeded ones draw from a tensor.RNG, so the same seed gives the same
// model.
type Initializer func(rng *tensor.RNG, dt tensor.DType, shape ...int) *tensor.Tensor

// fans returns fan-in and fan-out: for [in, out] matrices the two
// dimensions; for convolution filters [kh, kw, in, out] the receptive field
// times in and out.
func fans(shape []int) (in, out float64) {
	switch len(shape) {
	case 0:
		return 1, 1
	case 1:
		return float64(shape[0]), float64(shape[0])
	}
	field := 1.0
	for _, d := range shape[:len(shape)-2] {
		field *= float64(d)
	}
	return field * float64(shape[len(shape)-2]), field * float64(shape[len(shape)-1])
}

func scaled(t *tensor.Tensor, s float64) *tensor.Tensor { return ops.Mul(t, ops.ScalarLike(t, s)) }

// GlorotUniform (Xavier) draws from U(-l, l), l = sqrt(6/(fan_in+fan_out)).
func GlorotUniform(rng *tensor.RNG, dt tensor.DType, shape ...int) *tensor.Tensor {
	in, out := fans(shape)
	l := math.Sqrt(6 / (in + out))
	return tensor.RandUniform(rng, dt, -l, l, shape...)
}

// GlorotNormal draws from N(0, 2/(fan_in+fan_out)).
func GlorotNormal(rng *tensor.RNG, dt tensor.DType, shape ...int) *tensor.Tensor {
	in, out := fans(shape)
	return scaled(tensor.RandNormal(rng, dt, shape...), math.Sqrt(2/(in+out)))
}

// HeNormal draws from N(0, 2/fan_in), for ReLU networks.
func HeNormal(rng *tensor.RNG, dt tensor.DType, shape ...int) *tensor.Tensor {
	in, _ := fans(shape)
	return scaled(tensor.RandNormal(rng, dt, shape...), math.Sqrt(2/in))
}

// HeUniform draws from U(-l, l), l = sqrt(6/fan_in).
func HeUniform(rng *tensor.RNG, dt tensor.DType, shape ...int) *tensor.Tensor {
	in, _ := fans(shape)
	l := math.Sqrt(6 / in)
	return tensor.RandUniform(rng, dt, -l, l, shape...)
}

// RandomNormal returns the Initializer drawing from N(mean, stddev²)
// (Keras' RandomNormal; GPT-2's weights are RandomNormal(0, 0.02)). It
// panics with a *tensor.Error for a negative, infinite or NaN stddev or a
// mean that is not finite.
func RandomNormal(mean, stddev float64) Initializer {
	checkNormal("RandomNormal", mean, stddev)
	return func(rng *tensor.RNG, dt tensor.DType, shape ...int) *tensor.Tensor {
		return shifted(tensor.RandNormal(rng, tensor.Float64, shape...), mean, stddev, dt)
	}
}

// TruncatedNormal returns the Initializer drawing from N(mean, stddev²)
// with the draws more than two standard deviations from the mean drawn
// again (Keras' TruncatedNormal and TensorFlow's truncated_normal; BERT's
// weights are TruncatedNormal(0, 0.02)): the values' standard deviation
// is about 0.88·stddev. The redraws come from rng too, so a seed gives
// the same values. It panics as RandomNormal does.
func TruncatedNormal(mean, stddev float64) Initializer {
	checkNormal("TruncatedNormal", mean, stddev)
	return func(rng *tensor.RNG, dt tensor.DType, shape ...int) *tensor.Tensor {
		z := tensor.RandNormal(rng, tensor.Float64, shape...)
		v := tensor.ToSlice[float64](z)
		var far []int
		for i, x := range v {
			if math.Abs(x) > 2 {
				far = append(far, i)
			}
		}
		for len(far) > 0 { // about 4.6% of the draws a round
			redraw := tensor.ToSlice[float64](tensor.RandNormal(rng, tensor.Float64, len(far)))
			next := far[:0]
			for k, i := range far {
				if v[i] = redraw[k]; math.Abs(v[i]) > 2 {
					next = append(next, i)
				}
			}
			far = next
		}
		return shifted(tensor.FromSlice(v, z.Shape()...), mean, stddev, dt)
	}
}

// checkNormal panics with a *tensor.Error unless mean is finite and
// stddev finite and not negative.
func checkNormal(name string, mean, stddev float64) {
	if !(stddev >= 0) || math.IsInf(stddev, 0) || math.IsNaN(mean) || math.IsInf(mean, 0) {
		panic(tensor.NewError("nn", name, tensor.ErrValue, nil, "", "needs a finite mean and a finite stddev ≥ 0, got mean %v, stddev %v", mean, stddev))
	}
}

// shifted is mean + stddev·z (z float64) in dtype dt.
func shifted(z *tensor.Tensor, mean, stddev float64, dt tensor.DType) *tensor.Tensor {
	y := ops.Add(scaled(z, stddev), ops.ScalarLike(z, mean))
	if dt == tensor.Float64 {
		return y
	}
	return ops.Cast(y, dt)
}

// ZerosInit is the Initializer of zeros: it ignores the generator (a
// tensor of zeros is tensor.Zeros(dt, shape...)).
func ZerosInit(_ *tensor.RNG, dt tensor.DType, shape ...int) *tensor.Tensor {
	return tensor.Zeros(dt, shape...)
}

// Zeros is ZerosInit.
//
// Deprecated: use ZerosInit; nn.Zeros read as tensor.Zeros with another
// signature.
func Zeros(rng *tensor.RNG, dt tensor.DType, shape ...int) *tensor.Tensor {
	return ZerosInit(rng, dt, shape...)
}

// Orthogonal returns a matrix with orthonormal rows or columns (the last
// dimension against the product of the others), from Gram-Schmidt on a
// normal draw; for recurrent kernels.
func Orthogonal(rng *tensor.RNG, dt tensor.DType, shape ...int) *tensor.Tensor {
	if len(shape) < 2 {
		panic(tensor.NewError("nn", "Orthogonal", tensor.ErrRank, nil, "", "needs rank 2 or more, got shape %v", shape))
	}
	n, ok := tensor.Shape(shape).Size()
	if !ok {
		panic(tensor.NewError("nn", "Orthogonal", tensor.ErrShape, nil, "", "shape %v has a negative dimension or too many elements", shape))
	}
	if n == 0 {
		return tensor.Zeros(dt, shape...)
	}
	cols := shape[len(shape)-1]
	rows := n / cols
	n, m := max(rows, cols), min(rows, cols)
	a := tensor.ToSlice[float64](tensor.RandNormal(rng, tensor.Float64, m, n))
	for i := 0; i < m; i++ { // orthonormalize the m rows of length n
		row := a[i*n : (i+1)*n]
		for j := 0; j < i; j++ {
			prev := a[j*n : (j+1)*n]
			dot := 0.0
			for k := range row {
				dot += row[k] * prev[k]
			}
			for k := range row {
				row[k] -= dot * prev[k]
			}
		}
		norm := 0.0
		for _, v := range row {
			norm += v * v
		}
		norm = math.Sqrt(norm)
		for k := range row {
			row[k] /= norm
		}
	}
	q := tensor.FromSlice(a, m, n)
	if rows >= cols { // want [rows, cols] with orthonormal columns
		q = ops.Transpose(q)
	}
	return ops.Reshape(ops.Cast(q.Contiguous(), dt), shape...)
}
