package cuda

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/examples/gpt/model"
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
