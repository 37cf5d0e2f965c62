package cuda

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A traced loop gradient runs on the GPU as on the CPU; with SwapStacks it
// keeps its stacked values in host memory between the forward and
// backward loops and gives what it gives without swapping, on every call.
func TestSwapStacksOnGPU(t *testing.T) {
	d := testGPU(t)
	// Five steps of v ← sin(v·w), each iteration's values stacked for the
	// backward loop.
	step := func(in []*tensor.Tensor) []*tensor.Tensor {
		x, w := in[0], in[1]
		tp := tape.New()
		tp.Watch(x)
		tp.Watch(w)
		out := control.While(
			func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[0], ops.ScalarLike(v[0], 5)) },
			func(v []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{ops.Add(v[0], ops.ScalarLike(v[0], 1)), ops.Sin(ops.MatMul(v[1], w))}
			},
			[]*tensor.Tensor{tensor.FullOn(x.Device(), tensor.Float64, 0), x})
		g := tp.Gradient(ops.Sum(out[1]), x, w)
		return []*tensor.Tensor{out[1], g[0], g[1]}
	}
	r := tensor.NewRNG(12)
	x, w := tensor.RandNormalOn(d, r, tensor.Float64, 4, 6), tensor.RandNormalOn(d, r, tensor.Float64, 6, 6)
	onCPU := step([]*tensor.Tensor{onHost(t, x), onHost(t, w)})
	plain := trace.NewFunction(step)
	swapping := trace.NewFunction(step)
	swapping.SwapStacks = true
	for call := range 3 {
		want, err := plain.Call(x, w)
		if err != nil {
			t.Fatal(err)
		}
		before := d.host.swaps
		got, err := swapping.Call(x, w)
		if err != nil {
			t.Fatal(err)
		}
		if call > 0 && d.host.swaps == before { // the first call traces (eagerly)
			t.Fatalf("call %d swapped nothing out", call)
		}
		for i := range want {
			agree(t, "traced loop gradient", want[i], onCPU[i])
			agree(t, "swapped stacks", got[i], onHost(t, want[i]))
		}
	}
}

// Buffers of tensors dropped without Release return to the device's cache
// once collected: the cleanup behind Release.
func TestUnreleasedBuffersReturn(t *testing.T) {
	d := testGPU(t)
	inUse := func() int {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.inUse
	}
	for range 5 { // earlier tests' garbage first, so that only ours is left
		runtime.GC()
	}
	base := inUse()
	for range 20 {
		_ = tensor.FullOn(d, tensor.Float32, 1, 1000)
	}
	if inUse() <= base {
		t.Fatalf("20 tensors took no memory")
	}
	for range 20 {
		runtime.GC()
		if inUse() <= base {
			return
		}
	}
	t.Fatalf("%d bytes still in use after collection, %d before", inUse(), base)
}

// Copies from the host queued on one goroutine while others wait for the
// stream (a prefetching pipeline beside a training step, the collector
// releasing a recording) keep their bytes: a staging block is reused only
// once the stream has passed the copy that reads it, not when a wait that
// began before the copy was queued ends. A bad batch once trained a step
// here; waits at once on two goroutines once freed a block twice.
func TestCopiesFromHostKeepTheirBytesBesideAWait(t *testing.T) {
	d := testGPU(t)
	const waiters = 2
	stop := make(chan struct{})
	waits := make(chan error, waiters)
	for range waiters {
		go func() {
			for {
				select {
				case <-stop:
					waits <- nil
					return
				default:
					if err := d.Synchronize(); err != nil {
						waits <- err
						return
					}
				}
			}
		}()
	}
	bufs := make([]device.Buffer, 20000)
	for i := range bufs {
		b, err := d.Alloc(64)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.CopyFromHost(b, 0, bytes.Repeat([]byte{byte(i)}, 64)); err != nil {
			t.Fatal(err)
		}
		bufs[i] = b
	}
	close(stop)
	for range waiters {
		if err := <-waits; err != nil {
			t.Fatal(err)
		}
	}
	got := make([]byte, 64)
	for i, b := range bufs {
		if err := d.CopyToHost(got, b, 0); err != nil {
			t.Fatal(err)
		}
		if want := bytes.Repeat([]byte{byte(i)}, 64); !bytes.Equal(got, want) {
			t.Fatalf("buffer %d holds %v, want %d in every byte", i, got[:8], byte(i))
		}
		d.Free(b)
	}
}
