package ops_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/internal/leaktest"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A gradient rule releases what it makes and does not return, so that a
// training step under a tape releasing its intermediates leaves nothing
// to the collector: a warm step of each op below (its forward, the
// gradient of the sum of its squared output, the loss and the gradients
// released) leaves no large host buffer to the collector. A temporary
// left over costs a fresh, page-faulted buffer the next step
// (LogSoftmax's gradient left two of its input's size: its step took
// 2.5x as long).
func TestGradientRulesReleaseTheirTemporaries(t *testing.T) {
	r := tensor.NewRNG(8)
	f32 := func(shape ...int) *tensor.Tensor { return tensor.RandNormal(r, tensor.Float32, shape...) }
	pos := func(shape ...int) *tensor.Tensor { return tensor.RandUniform(r, tensor.Float32, 0.5, 2, shape...) }
	x, y, row, col := f32(64, 256), f32(64, 256), f32(256), f32(64, 1)
	img, imgc, filt := f32(4, 16, 16, 8), f32(4, 8, 16, 16), f32(3, 3, 8, 16)
	dw := f32(3, 3, 8, 1)
	q, k, v := f32(2, 4, 32, 16), f32(2, 4, 32, 16), f32(2, 4, 32, 16)
	ids := tensor.FromSlice([]int32{3, 1, 4, 1, 5, 9, 2, 6, 5, 3}, 10)
	labels := ops.Cast(ops.Gt(ops.Sum(x, 1), tensor.Scalar(float32(0))), tensor.Int32)
	same := ops.Conv2DOpts{Padding: ops.Same}
	pool := ops.PoolOpts{Size: [2]int{2, 2}, Strides: [2]int{2, 2}}
	type fn = func(in []*tensor.Tensor) *tensor.Tensor
	for _, c := range []struct {
		name string
		in   []*tensor.Tensor
		f    fn
	}{
		{"Exp, Log, Sqrt", []*tensor.Tensor{pos(64, 256)}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.Exp(ops.Log(ops.Sqrt(in[0]))) }},
		{"Tanh, Sigmoid, GeluTanh, Gelu", []*tensor.Tensor{x}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.Gelu(ops.GeluTanh(ops.Sigmoid(ops.Tanh(in[0]))))
		}},
		{"Relu, Softplus, Erf", []*tensor.Tensor{x}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.Erf(ops.Softplus(ops.Relu(in[0]))) }},
		{"Add, Sub, Mul, Div broadcast", []*tensor.Tensor{x, row, col}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.Div(ops.Mul(ops.Sub(ops.Add(in[0], in[1]), in[2]), in[1]), ops.Add(ops.Square(in[2]), tensor.Scalar(float32(1))))
		}},
		{"Pow, Maximum, Minimum, Where", []*tensor.Tensor{pos(64, 256), y}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.Where(ops.Gt(in[1], tensor.Scalar(float32(0))), ops.Pow(in[0], ops.Maximum(in[1], ops.Minimum(in[1], tensor.Scalar(float32(1))))), in[1])
		}},
		{"Softmax", []*tensor.Tensor{x}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.Softmax(in[0], 1) }},
		{"LogSoftmax", []*tensor.Tensor{x}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.LogSoftmax(in[0], 1) }},
		{"LogSoftmax along the first axis", []*tensor.Tensor{x}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.LogSoftmax(in[0], 0) }},
		{"SparseSoftmaxCrossEntropy", []*tensor.Tensor{x}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.SparseSoftmaxCrossEntropy(in[0], labels) }},
		{"SoftmaxCrossEntropy", []*tensor.Tensor{x, ops.Softmax(y, 1)}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.SoftmaxCrossEntropy(in[0], in[1]) }},
		{"Sum, Mean, Amax, Amin, Prod", []*tensor.Tensor{pos(64, 256)}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.Add(ops.Add(ops.Sum(in[0], 0), ops.Mean(in[0], 0)), ops.Add(ops.Amax(in[0], 0), ops.Mul(ops.Amin(in[0], 0), ops.Prod(ops.Sqrt(ops.Sqrt(in[0])), 0))))
		}},
		{"LayerNorm, RMSNorm", []*tensor.Tensor{x, row, row}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.RMSNorm(ops.LayerNorm(in[0], in[1], in[2], 1e-5), in[1], 1e-5)
		}},
		{"BatchNorm", []*tensor.Tensor{img, f32(8), f32(8)}, func(in []*tensor.Tensor) *tensor.Tensor {
			out, _, _ := ops.BatchNorm(in[0], in[1], in[2], 3, 1e-3)
			return out
		}},
		{"MatMul, transposed", []*tensor.Tensor{x, f32(128, 256)}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.MatMul(in[0], ops.Transpose(in[1], 1, 0)) }},
		{"Conv2D, MaxPool2D, AvgPool2D", []*tensor.Tensor{img, filt}, func(in []*tensor.Tensor) *tensor.Tensor {
			c := ops.Relu(ops.Conv2D(in[0], in[1], same))
			return ops.Add(ops.MaxPool2D(c, pool), ops.AvgPool2D(c, pool))
		}},
		{"Conv2D NCHW", []*tensor.Tensor{imgc, filt}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.Conv2D(in[0], in[1], ops.Conv2DOpts{Padding: ops.Same, Format: ops.NCHW})
		}},
		{"DepthwiseConv2D", []*tensor.Tensor{img, dw}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.DepthwiseConv2D(in[0], in[1], same) }},
		{"Attention", []*tensor.Tensor{q, k, v}, func(in []*tensor.Tensor) *tensor.Tensor { return ops.Attention(in[0], in[1], in[2], nil, true, 0) }},
		{"Gather, Concatenate, Split, Pad", []*tensor.Tensor{x, y}, func(in []*tensor.Tensor) *tensor.Tensor {
			parts := ops.Split(ops.Concatenate(1, in[0], in[1]), 1, []int{100, 412})
			return ops.Add(ops.Pad(ops.Gather(parts[0], ids, 0), tensor.Scalar(float32(0)), ops.PadDim{High: 54}, ops.PadDim{High: 156}), ops.Slice(parts[1], []int{0, 0}, []int{64, 256}, nil))
		}},
		{"Transpose, Reshape, Tile, Cumsum", []*tensor.Tensor{x}, func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.Cumsum(ops.Tile(ops.Reshape(ops.Transpose(in[0], 1, 0), 64, 256), 2, 1), 1, false, false)
		}},
		{"Sort, TopK", []*tensor.Tensor{x}, func(in []*tensor.Tensor) *tensor.Tensor {
			top, _ := ops.TopK(in[0], 8)
			return ops.Add(ops.Sum(ops.Sort(in[0], 1, false), 1), ops.Sum(top, 1))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			step := func() {
				tp := tape.New(tape.Options{ReleaseIntermediates: true})
				tp.Watch(c.in...)
				loss := ops.Sum(ops.Square(c.f(c.in)))
				for _, g := range tp.Gradient(loss, c.in...) {
					g.Release()
				}
				loss.Release()
			}
			step()
			step()
			if few, more := leaktest.StepsRecycled(step, 2, 12); more-few >= 8 {
				t.Errorf("10 steps more left %d large buffers more to the collector (2 steps: %d, 12: %d)", more-few, few, more)
			}
		})
	}
}
