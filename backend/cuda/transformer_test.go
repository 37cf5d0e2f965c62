package cuda

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/examples/gpt/model"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A small GPT's training steps on the GPU (the fused LayerNorm, GeluTanh
// and cross-entropy gradient kernels, attention as ops) follow the CPU's,
// and its KV-cache decoding runs there.
func TestGPTStepsOnGPU(t *testing.T) {
	d := testGPU(t)
	ids := make([]int32, 2*6)
	for i := range ids {
		ids[i] = int32(32 + (i*11)%60)
	}
	var losses [2][]float64
	for i, dev := range []device.Device{device.Host(), d} {
		onDevice(dev, func() {
			m := model.New(tensor.NewRNG(3), model.Config{Layers: 1, Heads: 2, Dim: 8, Context: 6})
			opt := model.NewOptimizer(10)
			x, _ := tensor.FromSlice(ids, 2, 6).To(dev)
			y, _ := tensor.FromSlice(append(ids[1:], 40), 2, 6).To(dev)
			for range 3 {
				l, err := m.TrainStep(opt, x, y)
				if err != nil {
					t.Fatal(err)
				}
				losses[i] = append(losses[i], l)
			}
			caches := m.NewCaches()
			first, _ := tensor.FromSlice([]int32{'f'}, 1, 1).To(dev)
			if logits := m.Decode(first, caches); logits.Device() != dev || caches[0].Len() != 1 {
				t.Errorf("decoding on %s: logits on %s, %d cached", dev.Name(), logits.Device().Name(), caches[0].Len())
			}
		})
	}
	for i := range losses[0] {
		if math.Abs(losses[0][i]-losses[1][i]) > 1e-4 {
			t.Fatalf("losses on the CPU %v, on the GPU %v", losses[0], losses[1])
		}
	}
}

// Attention on the GPU (the cuBLAS products and the row kernels) equals
// the CPU's in value and in the gradients of q, k and v: a mask per batch
// with a row of nothing, causal with more keys than queries, float64 and
// float32.
func TestAttentionOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(8)
	keep := make([]bool, 2*3*4*6)
	for i := range keep {
		keep[i] = i%5 != 1
	}
	for j := range 6 { // batch 0, head 0, query 2: attends to nothing
		keep[2*6+j] = false
	}
	mask := tensor.FromSlice(keep, 2, 3, 4, 6)
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		q, k, v := tensor.RandNormal(r, dt, 2, 3, 4, 5), tensor.RandNormal(r, dt, 2, 3, 6, 5), tensor.RandNormal(r, dt, 2, 3, 6, 3)
		for _, c := range []struct {
			mask   *tensor.Tensor
			causal bool
		}{{mask, false}, {nil, true}} {
			var vals [2]*tensor.Tensor
			var grads [2][]*tensor.Tensor
			for i, dev := range []device.Device{device.Host(), d} {
				on := func(x *tensor.Tensor) *tensor.Tensor {
					if x == nil {
						return nil
					}
					y, err := x.To(dev)
					if err != nil {
						t.Fatal(err)
					}
					return y
				}
				qd, kd, vd := on(q), on(k), on(v)
				tp := tape.New()
				tp.Watch(qd, kd, vd)
				out := ops.Attention(qd, kd, vd, on(c.mask), c.causal, 0)
				w := on(tensor.RandUniform(tensor.NewRNG(2), dt, -1, 1, out.Shape()...))
				safe := ops.Where(ops.IsFinite(out), out, ops.ZerosLike(out)) // the row of nothing is NaN
				grads[i] = tp.Gradient(ops.Sum(ops.Mul(safe, w)), qd, kd, vd)
				vals[i] = out
			}
			tol := map[tensor.DType]float64{tensor.Float64: 1e-12, tensor.Float32: 1e-5}[dt]
			for j, pair := range [][2]*tensor.Tensor{{vals[0], vals[1]}, {grads[0][0], grads[1][0]}, {grads[0][1], grads[1][1]}, {grads[0][2], grads[1][2]}} {
				a := tensor.ToSlice[float64](ops.Cast(pair[0], tensor.Float64))
				b := tensor.ToSlice[float64](ops.Cast(onHost(t, pair[1]), tensor.Float64))
				for e := range a {
					if !(math.Abs(a[e]-b[e]) <= tol*math.Max(1, math.Abs(a[e]))) && !(math.IsNaN(a[e]) && math.IsNaN(b[e])) {
						t.Fatalf("%v causal=%v, output %d: element %d is %v on the GPU, %v on the CPU", dt, c.causal, j, e, b[e], a[e])
					}
				}
			}
		}
	}
}
