package cuda

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/benchmodels"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// nullDriver is a driver whose device does nothing: every call succeeds
// at once, launches run nothing, memory is fake addresses. On it an op
// costs what the backend spends on the host around the driver's calls
// (dispatch, buffers, packing arguments), which BenchmarkEagerAddHostCost
// measures on machines without a GPU.
type nullDriver struct{ ctx *nullContext }

func (d nullDriver) Name() string                   { return "null" }
func (d nullDriver) Version() (int, error)          { return 13000, nil }
func (d nullDriver) DeviceCount() (int, error)      { return 1, nil }
func (d nullDriver) Retain(int) (cu.Context, error) { return d.ctx, nil }
func (d nullDriver) Device(int) (cu.Info, error) {
	return cu.Info{Name: "null", Memory: 1 << 40, Major: 9, SMs: 132}, nil
}

type nullContext struct{ next atomic.Uint64 }

func (c *nullContext) Do(fn func() error) error   { return fn() }
func (c *nullContext) MemInfo() (int, int, error) { return 1 << 40, 1 << 40, nil }
func (c *nullContext) MemAlloc(n int, _ cu.Stream) (cu.Ptr, error) {
	return cu.Ptr(c.next.Add(uint64(n+255) &^ 255)), nil
}
func (c *nullContext) MemFree(cu.Ptr, cu.Stream) error            { return nil }
func (c *nullContext) MemAllocHost(n int) ([]byte, error)         { return make([]byte, n), nil }
func (c *nullContext) MemFreeHost([]byte) error                   { return nil }
func (c *nullContext) MemcpyHtoD(cu.Ptr, []byte, cu.Stream) error { return nil }
func (c *nullContext) MemcpyDtoH(dst []byte, _ cu.Ptr, _ cu.Stream) error {
	for i := range dst { // all ones: the index checks' slots say no failure
		dst[i] = 0xff
	}
	return nil
}
func (c *nullContext) MemcpyDtoD(cu.Ptr, cu.Ptr, int, cu.Stream) error { return nil }
func (c *nullContext) MemsetD8(cu.Ptr, byte, int, cu.Stream) error     { return nil }
func (c *nullContext) MemsetD32(cu.Ptr, uint32, int, cu.Stream) error  { return nil }
func (c *nullContext) ModuleLoad(string) (cu.Module, error)            { return 1, nil }
func (c *nullContext) Function(cu.Module, string) (cu.Function, error) { return 1, nil }
func (c *nullContext) StreamCreate() (cu.Stream, error)                { return 1, nil }
func (c *nullContext) StreamSynchronize(cu.Stream) error               { return nil }
func (c *nullContext) Gemm(cu.Stream, cu.Gemm) error                   { return nil }
func (c *nullContext) Launch(cu.Function, cu.Dim3, cu.Dim3, int, cu.Stream, *cu.Args) error {
	return nil
}
func (c *nullContext) DoLaunch(cu.Function, cu.Dim3, cu.Dim3, int, cu.Stream, *cu.Args) error {
	return nil
}

// nullDevice opens a device of the null driver (unregistered).
func nullDevice(tb testing.TB) *Device {
	d, err := open(nullDriver{ctx: &nullContext{}}, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// BenchmarkEagerAddHostCost is an eager Add of 16 float32 on a device
// whose driver does nothing: the host's part of BenchmarkEagerAddGPU, the
// per-op cost to set beside PyTorch's.
func BenchmarkEagerAddHostCost(b *testing.B) {
	d := nullDevice(b)
	x, err := tensor.Empty(d, tensor.Float32, tensor.Shape{16})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ops.Add(x, x).Release()
	}
}

// An eager op on the GPU allocates little on the host: its output tensor,
// its buffer record and the record's cleanup (the launch's arguments come
// from a pool; the kernel's name, the module's key and the call into the
// context are allocation-free).
func TestEagerAddHostAllocations(t *testing.T) {
	d := nullDevice(t)
	x, err := tensor.Empty(d, tensor.Float32, tensor.Shape{16})
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() { ops.Add(x, x).Release() })
	t.Logf("%.1f allocations per eager Add", allocs)
	if allocs > maxAllocsPerOp {
		t.Errorf("%.1f allocations per eager Add on the GPU, at most %d", allocs, maxAllocsPerOp)
	}
}

// maxAllocsPerOp bounds the host allocations of a small eager GPU op.
const maxAllocsPerOp = 4

// BenchmarkTrainStepHostCost is a whole eager training step (nn.TrainStep,
// Adam, the loss read) on a device whose driver does nothing: the host's
// part of BenchmarkMLPTrainStepGPU/eager and of the Fashion-MNIST CNN's
// step (NHWC, without cuDNN: the null driver has none), per step; the
// same traced (nn.TracedTrainStep: the graph run op by op), and under
// the mixed_bfloat16 policy (its casts).
func BenchmarkTrainStepHostCost(b *testing.B) {
	for _, name := range []string{"MLP/eager", "CNN/eager", "MLP/traced", "CNN/traced", "MLP/eager/mixed_bfloat16", "CNN/eager/mixed_bfloat16"} {
		b.Run(name, func(b *testing.B) {
			name, mode, _ := strings.Cut(name, "/")
			mode, policy := policyOf(mode)
			d := nullDevice(b)
			restore := device.SetDefault(d)
			defer restore()
			var model *nn.Sequential
			var opt nn.Optimizer
			var x, y *tensor.Tensor
			if name == "MLP" {
				r := tensor.NewRNG(4)
				model = nn.NewSequential(
					nn.NewDense("dense1", r, 784, 512, nn.DenseOpts{Activation: ops.Relu}),
					nn.NewDense("dense2", r, 512, 512, nn.DenseOpts{Activation: ops.Relu}),
					nn.NewDense("logits", r, 512, 10, nn.DenseOpts{}))
				opt = nn.NewAdam(nn.Constant(1e-3))
				x, y = tensor.Zeros(tensor.Float32, 256, 784), tensor.Zeros(tensor.Int32, 256)
			} else {
				model, opt, x, y = benchmodels.FashionCNN(ops.NHWC)
			}
			model.Policy = policy
			batch := data.Element{onGPU(b, d, x), onGPU(b, d, y)}
			step := stepOf(mode)(model, nn.SparseSoftmaxCrossEntropy, opt)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := step(batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
