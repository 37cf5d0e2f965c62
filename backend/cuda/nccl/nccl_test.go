package nccl

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/backend/cuda"
	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/collective/mpi"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/mpitest"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The tests run on the emulated GPU and NCCL unless EAGERFLOW_REQUIRE_GPU
// is 1 (scripts/gpu-confirm's run on a GPU machine: NCCL with one rank).
func TestMain(m *testing.M) {
	if os.Getenv("EAGERFLOW_REQUIRE_GPU") != "1" && os.Getenv(cuda.EnvDriver) == "" {
		os.Setenv(cuda.EnvDriver, "emulator")
	}
	os.Exit(m.Run())
}

func testGPU(t testing.TB) *cuda.Device {
	t.Helper()
	d, err := cuda.Open(0)
	if err != nil {
		t.Fatalf("opening gpu:0 (%s=%q): %v", cuda.EnvDriver, os.Getenv(cuda.EnvDriver), err)
	}
	return d
}

// host returns a function that gives a collective's result's values on
// the host, failing the test on error: host[float32](t)(c.AllReduce(...)).
func host[T tensor.Elem](t testing.TB) func(x *tensor.Tensor, err error) []T {
	return func(x *tensor.Tensor, err error) []T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		h, err := x.To(device.Host())
		if err != nil {
			t.Fatal(err)
		}
		return tensor.ToSlice[T](h)
	}
}

// One rank with no MPI (collective.Single as the host side): every
// collective gives back its input, results are on the GPU, and bad
// arguments are errors. On a GPU machine this is NCCL itself with one rank.
func TestOneRank(t *testing.T) {
	gpu := testGPU(t)
	c, err := Open(gpu, collective.Single())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Logf("%s: %s", gpu.Name(), c.Library())
	if c.Rank() != 0 || c.Size() != 1 {
		t.Fatalf("rank %d of %d", c.Rank(), c.Size())
	}
	x := tensor.FromSlice([]float32{1, -2, 3.5, 4, 5, 6}, 2, 3)
	for _, op := range []collective.Op{collective.Sum, collective.Mean, collective.Max, collective.Min} {
		got, err := c.AllReduce(x, op)
		if err == nil && got.Device() != gpu {
			t.Errorf("AllReduce %v: result on %s", op, got.Device().Name())
		}
		if v := host[float32](t)(got, err); !slices.Equal(v, tensor.ToSlice[float32](x)) {
			t.Errorf("AllReduce %v = %v", op, v)
		}
	}
	xt := x.View(tensor.Shape{3, 2}, tensor.Layout{0, 1}) // a transposed view: made row-major first
	if v := host[float32](t)(c.AllReduce(xt, collective.Sum)); !slices.Equal(v, []float32{1, 4, -2, 5, 3.5, 6}) {
		t.Errorf("AllReduce of a transposed view = %v", v)
	}
	ints := tensor.FromSlice([]int64{7, -8, 9})
	if v := host[int64](t)(c.Broadcast(ints, 0)); !slices.Equal(v, []int64{7, -8, 9}) {
		t.Errorf("Broadcast = %v", v)
	}
	g, err := c.AllGather(ints)
	if v := host[int64](t)(g, err); !slices.Equal(v, []int64{7, -8, 9}) || !slices.Equal(g.Shape(), tensor.Shape{1, 3}) {
		t.Errorf("AllGather = %v %v", g.Shape(), v)
	}
	rs, err := c.ReduceScatter(x, collective.Sum)
	if v := host[float32](t)(rs, err); !slices.Equal(v, tensor.ToSlice[float32](x)) || !slices.Equal(rs.Shape(), tensor.Shape{2, 3}) {
		t.Errorf("ReduceScatter = %v %v", rs.Shape(), v)
	}
	flags := tensor.FromSlice([]bool{true, false})
	if v := host[bool](t)(c.Broadcast(flags, 0)); !slices.Equal(v, []bool{true, false}) {
		t.Errorf("Broadcast of bools = %v", v)
	}
	onGPU, err := x.To(gpu)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AllReduceInPlace(onGPU, collective.Sum); err != nil {
		t.Fatal(err)
	}
	if v := host[float32](t)(onGPU, nil); !slices.Equal(v, tensor.ToSlice[float32](x)) {
		t.Errorf("AllReduceInPlace = %v", v)
	}
	empty, err := c.AllReduce(tensor.Zeros(tensor.Float32, 0, 4), collective.Sum)
	if err != nil || !slices.Equal(empty.Shape(), tensor.Shape{0, 4}) {
		t.Errorf("AllReduce of an empty tensor: %v %v", empty, err)
	}
	if err := c.Barrier(); err != nil {
		t.Fatal(err)
	}

	bad := []struct {
		name, want string
		err        error
	}{
		{"Mean of ints", "a mean needs floats", second(c.AllReduce(ints, collective.Mean))},
		{"bool reduce", "cannot be reduced", second(c.AllReduce(flags, collective.Max))},
		{"nil", "nil tensor", second(c.AllGather(nil))},
		{"root", "root 1 outside", second(c.Broadcast(x, 1))},
		{"scatter", "multiple of the size", second(c.ReduceScatter(tensor.Scalar(float32(1)), collective.Sum))},
		{"self send", "cannot send to itself", c.Send(x, 0, 0)},
		{"peer", "rank 3 (of 1)", c.Send(x, 3, 0)},
		{"recv", "rank -1 (of 1)", second(c.Recv(x, -1, 0))},
		{"in place on the host", "want a row-major tensor on " + gpu.Name(), c.AllReduceInPlace(x, collective.Sum)},
		{"op", "unknown op", second(c.AllReduce(x, collective.Op(9)))},
	}
	for _, b := range bad {
		if b.err == nil || !errors.Is(b.err, collective.ErrCollective) || !strings.Contains(b.err.Error(), b.want) {
			t.Errorf("%s: error %v, want ErrCollective saying %q", b.name, b.err, b.want)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AllReduce(x, collective.Sum); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("AllReduce after Close: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

func must(t *tensor.Tensor, err error) *tensor.Tensor {
	if err != nil {
		panic(err)
	}
	return t
}

// The tests run this test binary again under mpirun, 2 and 3 ranks, each
// with its own emulated GPU and the emulated NCCL over MPI.
func TestCollectivesUnderMPIRun(t *testing.T) {
	if os.Getenv("EAGERFLOW_REQUIRE_GPU") == "1" {
		t.Skip("the GPU machine has one GPU and no MPI: TestOneRank runs NCCL there")
	}
	for _, np := range []int{2, 3} {
		t.Run(fmt.Sprint(np), func(t *testing.T) { mpitest.Run(t, np, "TestRankCollectives") })
	}
}

// TestRankCollectives is one rank's part: every collective on values each
// rank can predict, Send and Recv around a ring, and a rank that calls
// another collective than the others (an error where NCCL would hang).
func TestRankCollectives(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestCollectivesUnderMPIRun's mpirun")
	}
	hostComm, err := mpi.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer hostComm.Close()
	gpu := testGPU(t)
	c, err := Open(gpu, hostComm)
	if err != nil {
		t.Fatal(err)
	}
	r, n := c.Rank(), c.Size()
	mine := tensor.FromSlice([]float32{float32(r), float32(10 * r), 1, float32(-r)}, 2, 2)
	tri := float32(n * (n - 1) / 2)
	want := [][]float32{
		collective.Sum:  {tri, 10 * tri, float32(n), -tri},
		collective.Mean: {tri / float32(n), 10 * tri / float32(n), 1, -tri / float32(n)},
		collective.Max:  {float32(n - 1), float32(10 * (n - 1)), 1, 0},
		collective.Min:  {0, 0, 1, float32(1 - n)},
	}
	for op, w := range want { // the same order on every rank
		if v := host[float32](t)(c.AllReduce(mine, collective.Op(op))); !slices.Equal(v, w) {
			t.Errorf("rank %d: AllReduce %v = %v, want %v", r, collective.Op(op), v, w)
		}
	}
	// bfloat16 and float16 go to NCCL as they are (small integers: every
	// partial sum is exact, so the ring's roundings change nothing).
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		h := ops.Cast(tensor.FromSlice([]float32{float32(r), 2, -1.5}), dt)
		got, err := c.AllReduce(h, collective.Sum)
		if err != nil {
			t.Fatalf("rank %d: AllReduce of %v: %v", r, dt, err)
		}
		if got.DType() != dt {
			t.Errorf("rank %d: AllReduce of %v gave %v", r, dt, got.DType())
		}
		if v := host[float32](t)(ops.Cast(got, tensor.Float32), err); !slices.Equal(v, []float32{tri, float32(2 * n), -1.5 * float32(n)}) {
			t.Errorf("rank %d: AllReduce of %v = %v", r, dt, v)
		}
	}
	ints := tensor.FromSlice([]int32{int32(r), 2})
	if v := host[int32](t)(c.AllReduce(ints, collective.Sum)); !slices.Equal(v, []int32{int32(tri), int32(2 * n)}) {
		t.Errorf("rank %d: AllReduce of int32 = %v", r, v)
	}
	b := tensor.FromSlice([]float64{float64(100 + r), 3})
	if v := host[float64](t)(c.Broadcast(b, n-1)); !slices.Equal(v, []float64{float64(99 + n), 3}) {
		t.Errorf("rank %d: Broadcast = %v", r, v)
	}
	g, err := c.AllGather(tensor.FromSlice([]int64{int64(r), int64(r * r)}))
	var wantG []int64
	for k := range n {
		wantG = append(wantG, int64(k), int64(k*k))
	}
	if v := host[int64](t)(g, err); !slices.Equal(v, wantG) || !slices.Equal(g.Shape(), tensor.Shape{n, 2}) {
		t.Errorf("rank %d: AllGather = %v %v", r, g.Shape(), v)
	}
	rows := make([]float32, 2*n)
	for i := range rows {
		rows[i] = float32(i + r)
	}
	rs, err := c.ReduceScatter(tensor.FromSlice(rows, n, 2), collective.Sum)
	wantRS := []float32{float32(n*2*r) + tri, float32(n*(2*r+1)) + tri}
	if v := host[float32](t)(rs, err); !slices.Equal(v, wantRS) {
		t.Errorf("rank %d: ReduceScatter = %v, want %v", r, v, wantRS)
	}
	// A ring: even ranks send first, odd ranks receive first (NCCL's
	// sends block until matched, as a real ring would without a group).
	next, prev := (r+1)%n, (r+n-1)%n
	out := tensor.FromSlice([]float32{float32(r), 0.5})
	var got *tensor.Tensor
	if r%2 == 0 {
		if err := c.Send(out, next, 1); err != nil {
			t.Fatal(err)
		}
		got, err = c.Recv(out, prev, 1)
	} else {
		got, err = c.Recv(out, prev, 1)
		if err == nil {
			err = c.Send(out, next, 1)
		}
	}
	if v := host[float32](t)(got, err); !slices.Equal(v, []float32{float32(prev), 0.5}) {
		t.Errorf("rank %d: Recv from %d = %v", r, prev, v)
	}
	if err := c.Barrier(); err != nil {
		t.Fatalf("rank %d: %v", r, err)
	}
	// The collectives as ops on the GPU: a tape differentiates through
	// them, the rules' collectives running on NCCL too (float64 on the
	// device; the values are exact): d/dx of Σ_ranks Σ(w_r · max_r x) is
	// Σ_r w_r where this rank holds the maximum, and of the gathered mean
	// Σ_r w_r[this rank] / n.
	x, _ := tensor.FromSlice([]float64{float64(r), 5}).To(gpu)
	w, _ := tensor.FromSlice([]float64{float64(r + 1), 1}).To(gpu)
	tp := tape.New()
	tp.Watch(x)
	mx := must(c.AllReduce(x, collective.Max))
	gathered := must(c.AllGather(must(c.AllReduce(x, collective.Mean)))) // [n 2]
	loss := ops.Add(ops.Sum(ops.Mul(mx, w)), ops.Sum(ops.Mul(ops.Sum(gathered, 0), w)))
	dx := tp.Gradient(loss, x)[0]
	sumW := float64(n * (n + 1) / 2)
	wantDx := []float64{sumW, 1 + float64(n)} // the mean's part, and the max's shared tie at 5
	if r == n-1 {
		wantDx[0] += sumW // the max's element 0 is this rank's alone
	}
	if dx.Device() != device.Device(gpu) {
		t.Errorf("rank %d: the gradient is on %s", r, dx.Device().Name())
	}
	if v := host[float64](t)(dx, nil); math.Abs(v[0]-wantDx[0]) > 1e-12 || math.Abs(v[1]-wantDx[1]) > 1e-12 {
		t.Errorf("rank %d: gradient through the GPU collectives %v, want %v", r, v, wantDx)
	}

	// Rank 0 reduces 3 elements where the others reduce 4: every rank's
	// stream fails with the emulator's report (the GPU is unusable after,
	// as after a kernel fault, so this comes last).
	count := 4
	if r == 0 {
		count = 3
	}
	if _, err := c.AllReduce(tensor.Zeros(tensor.Float32, count), collective.Sum); err != nil {
		t.Fatal(err)
	}
	err = c.Barrier()
	if err == nil || !strings.Contains(err.Error(), "ncclInvalidUsage") || !strings.Contains(err.Error(), "count 3") {
		t.Errorf("rank %d: mismatched AllReduce: %v, want ncclInvalidUsage naming the two calls", r, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// stalled is a host communicator of two ranks whose other rank joins and
// then never calls again: this process is rank 0.
type stalled struct {
	collective.Comm
	calls int
}

func (s *stalled) Rank() int { return 0 }
func (s *stalled) Size() int { return 2 }

func (s *stalled) Broadcast(t *tensor.Tensor, root int) (*tensor.Tensor, error) {
	return collective.Single().Broadcast(t, root)
}

func (s *stalled) AllGather(t *tensor.Tensor) (*tensor.Tensor, error) {
	if s.calls++; s.calls > 1 {
		select {} // the other rank never comes
	}
	both := append(tensor.ToSlice[uint8](t), tensor.ToSlice[uint8](t)...)
	return tensor.FromSlice(both, 2, t.NumElements()), nil
}

const envStallChild = "EAGERFLOW_NCCL_STALL_CHILD"

// A Barrier whose peer never arrives fails after the timeout with
// collective.ErrTimeout naming the wait, and the communicator stays
// failed. It runs in a child process: the stalled stream keeps the
// emulated GPU busy for good.
func TestBarrierTimesOut(t *testing.T) {
	if os.Getenv(envStallChild) == "" {
		if os.Getenv("EAGERFLOW_REQUIRE_GPU") == "1" {
			t.Skip("needs the emulator's stalled peer")
		}
		cmd := exec.Command(os.Args[0], "-test.run", "^TestBarrierTimesOut$", "-test.v")
		cmd.Env = append(os.Environ(), envStallChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestBarrierTimesOut") {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	c, err := Open(testGPU(t), &stalled{})
	if err != nil {
		t.Fatal(err)
	}
	c.SetTimeout(200 * time.Millisecond)
	start := time.Now()
	err = c.Barrier()
	if !errors.Is(err, collective.ErrTimeout) || !strings.Contains(err.Error(), "did not finish within 200ms") {
		t.Fatalf("Barrier: %v, want a timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Barrier took %v to time out", d)
	}
	if _, err := c.AllReduce(tensor.FromSlice([]float32{1}), collective.Sum); !errors.Is(err, collective.ErrTimeout) {
		t.Errorf("AllReduce after the timeout: %v", err)
	}
	os.Exit(func() int { fmt.Println("--- PASS: TestBarrierTimesOut"); return 0 }())
}
