package cuda

import (
	"errors"
	"runtime"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// A recording replays the ops captured in it on whatever their input
// buffers hold; the work of the capture itself runs only with a replay;
// the intermediates' memory stays the recording's.
func TestCaptureReplaysOps(t *testing.T) {
	d := testGPU(t)
	x := onGPU(t, d, tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2))
	w := onGPU(t, d, tensor.FromSlice([]float32{1, 0, 0, 2}, 2, 2))
	var out *tensor.Tensor
	launches := 0
	ctx, emulated := d.ctx.(*emu.Context)
	if emulated {
		launches = ctx.Launches
	}
	rec, err := d.Capture(func() error {
		h := ops.Add(ops.MatMul(x, w), x) // an intermediate freed inside the capture
		out = ops.Relu(ops.Sub(h, ops.ScalarLike(h, 3)))
		h.Release()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if emulated && ctx.Launches != launches {
		t.Errorf("%d kernels ran during the capture", ctx.Launches-launches)
	}
	for round, in := range [][]float32{{1, 2, 3, 4}, {-1, 5, 0, 2}} {
		// New values into x's buffer, then the replay.
		src := onGPU(t, d, tensor.FromSlice(in, 2, 2))
		if err := d.Copy(x.Buffer(), 0, []int{1}, src.Buffer(), 0, []int{1}, []int{4}, 4); err != nil {
			t.Fatal(err)
		}
		if err := rec.Replay(); err != nil {
			t.Fatal(err)
		}
		xh := tensor.FromSlice(in, 2, 2)
		want := tensor.ToSlice[float32](ops.Relu(ops.Sub(ops.Add(ops.MatMul(xh, tensor.FromSlice([]float32{1, 0, 0, 2}, 2, 2)), xh), tensor.Scalar(float32(3)))))
		if got := tensor.ToSlice[float32](onHost(t, out)); !slices.Equal(got, want) {
			t.Errorf("replay %d: %v, want %v", round, got, want)
		}
	}
	runtime.KeepAlive(w) // the recording reads w's buffer: w must outlive its replays
}

// Work that waits for the device inside a capture is not recorded: the
// capture fails with device.ErrCapture and nothing ran; an index out of
// range in a replayed gather is reported at the next synchronisation.
func TestCaptureFailuresAndChecks(t *testing.T) {
	d := testGPU(t)
	x := onGPU(t, d, tensor.FromSlice([]float32{1, 2, 3}, 3))
	_, err := d.Capture(func() error {
		y := ops.Add(x, x)
		_ = tensor.ToSlice[float32](y) // a read: a wait for the stream
		return nil
	})
	if !errors.Is(err, device.ErrCapture) {
		t.Fatalf("a capture with a read: %v, want ErrCapture", err)
	}
	if got := tensor.ToSlice[float32](onHost(t, ops.Mul(x, x))); !slices.Equal(got, []float32{1, 4, 9}) {
		t.Errorf("the device after a failed capture: %v", got)
	}
	idx := onGPU(t, d, tensor.FromSlice([]int32{0, 2}, 2))
	var g *tensor.Tensor
	rec, err := d.Capture(func() error { g = ops.Gather(x, idx, 0); return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if err := rec.Replay(); err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatalf("good indices: %v", err)
	}
	bad := onGPU(t, d, tensor.FromSlice([]int32{1, 7}, 2))
	if err := d.Copy(idx.Buffer(), 0, []int{1}, bad.Buffer(), 0, []int{1}, []int{2}, 4); err != nil {
		t.Fatal(err)
	}
	if err := rec.Replay(); err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); !errors.Is(err, tensor.ErrIndex) {
		t.Errorf("a bad index in a replay: %v, want ErrIndex", err)
	}
	if got := tensor.ToSlice[float32](onHost(t, g)); !slices.Equal(got, []float32{2, 0}) {
		t.Errorf("the replayed gather: %v", got)
	}
}

// A recording released while another capture runs (the collector's
// cleanup of a dropped traced function, at any moment) waits for the
// capture's end: freeing its memory or waiting for the stream then would
// invalidate the capture.
func TestReleaseDuringCaptureWaits(t *testing.T) {
	d := testGPU(t)
	x := onGPU(t, d, tensor.FromSlice([]float32{1, -2, 3}, 3))
	var y *tensor.Tensor
	first, err := d.Capture(func() error { y = ops.Relu(x); return nil })
	if err != nil {
		t.Fatal(err)
	}
	var z *tensor.Tensor
	second, err := d.Capture(func() error {
		z = ops.Neg(x)
		first.Release() // as a cleanup would, mid-capture
		return nil
	})
	if err != nil {
		t.Fatalf("a release during the capture broke it: %v", err)
	}
	defer second.Release()
	if err := second.Replay(); err != nil {
		t.Fatal(err)
	}
	if got := tensor.ToSlice[float32](onHost(t, z)); !slices.Equal(got, []float32{-1, 2, -3}) {
		t.Errorf("the second recording gave %v", got)
	}
	if err := first.Replay(); err == nil {
		t.Error("the released recording replayed")
	}
	runtime.KeepAlive(y)
}
