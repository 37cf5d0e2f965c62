package scratchbench

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

func TestStepTrend(t *testing.T) {
	rng := tensor.NewRNG(1)
	x := tensor.RandNormal(rng, tensor.Float32, 2048, 1024)
	labels := ops.Cast(tensor.RandUniform(rng, tensor.Float32, 0, 10, 2048), tensor.Int32)
	wrng := tensor.NewRNG(7)
	relu := nn.DenseOpts{Activation: ops.Relu}
	model := nn.NewSequential(
		nn.NewDense("dense1", wrng, 1024, 1024, relu),
		nn.NewDense("dense2", wrng, 1024, 1024, relu),
		nn.NewDense("dense3", wrng, 1024, 1024, relu),
		nn.NewDense("dense4", wrng, 1024, 1024, relu),
		nn.NewDense("logits", wrng, 1024, 10, nn.DenseOpts{}))
	step := nn.TrainStep(model, nn.SparseSoftmaxCrossEntropy, &nn.SGD{LR: nn.Constant(0.01)})
	var s string
	var ms runtime.MemStats
	for i := 0; i < 24; i++ {
		runtime.ReadMemStats(&ms)
		gc0, sys0 := ms.NumGC, ms.HeapSys-ms.HeapReleased
		t0 := time.Now()
		step(data.Element{x, labels})
		d := time.Since(t0)
		runtime.ReadMemStats(&ms)
		s += fmt.Sprintf("\n%d %.0fms gc+%d heapInUseOS %+dMB alloc %dMB", i, float64(d.Microseconds())/1000, ms.NumGC-gc0, (int64(ms.HeapSys-ms.HeapReleased)-int64(sys0))>>20, ms.HeapAlloc>>20)
	}
	t.Log(s)
}
