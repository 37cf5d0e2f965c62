//go:build linux || darwin

package mpi

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/internal/mpitest"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// A rendezvous over MPI (Comm.Transport) under Open MPI and MPICH, 2 and 3
// ranks: every rank posts to every rank (itself too) small, empty, dead
// and 8 MB values (past MPI's eager limit, so the transfer waits for the
// receive) from several goroutines, and receives them in another order.
func TestRendezvousUnderMPIRun(t *testing.T) {
	for _, l := range []mpitest.Launcher{mpitest.OpenMPI, mpitest.MPICH} {
		for _, np := range []int{2, 3} {
			t.Run(fmt.Sprint(l, np), func(t *testing.T) { mpitest.RunWith(t, l, np, "TestRankRendezvous") })
		}
	}
}

func TestRankRendezvous(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestRendezvousUnderMPIRun's mpirun")
	}
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tr, err := c.Transport()
	if err != nil {
		t.Fatal(err)
	}
	rdv, err := collective.NewRendezvous(tr)
	if err != nil {
		t.Fatal(err)
	}
	r, n := c.Rank(), c.Size()
	big := 2 << 20 // float32s: 8 MB
	value := func(from, to, k int) *tensor.Tensor {
		switch k {
		case 0:
			return tensor.FromSlice([]int64{int64(from), int64(to)})
		case 1:
			return tensor.Zeros(tensor.Float64, 0, 3)
		case 2:
			return nil // dead
		}
		return tensor.FullOf(tensor.Float32, float64(100*from+to), big)
	}
	var wg sync.WaitGroup
	for to := range n {
		for k := range 4 {
			wg.Go(func() {
				if err := rdv.Post(to, fmt.Sprintf("v%d", k), value(r, to, k), k == 2); err != nil {
					t.Error(err)
				}
			})
		}
	}
	for from := range n {
		for _, k := range []int{3, 2, 1, 0} {
			got, dead, err := rdv.Receive(from, fmt.Sprintf("v%d", k))
			want := value(from, r, k)
			switch {
			case err != nil:
				t.Fatalf("rank %d: from %d, v%d: %v", r, from, k, err)
			case dead != (k == 2):
				t.Errorf("rank %d: from %d, v%d: dead %v", r, from, k, dead)
			case k == 2:
			case !got.Shape().Equal(want.Shape()) || got.DType() != want.DType():
				t.Errorf("rank %d: from %d, v%d: %v, want %v", r, from, k, tensor.Describe(got), tensor.Describe(want))
			case k == 3 && (tensor.ToSlice[float32](got)[big-1] != float32(100*from+r)):
				t.Errorf("rank %d: from %d: the big value ends with %v", r, from, tensor.ToSlice[float32](got)[big-1])
			case k == 0 && tensor.ToSlice[int64](got)[0] != int64(from):
				t.Errorf("rank %d: from %d: %v", r, from, got)
			}
		}
	}
	wg.Wait()
	// A key no one posts times out, naming it.
	rdv.SetTimeout(100 * time.Millisecond)
	if _, _, err := rdv.Receive((r+1)%n, "nobody"); !errors.Is(err, collective.ErrTimeout) || !strings.Contains(err.Error(), `"nobody"`) {
		t.Errorf("rank %d: %v", r, err)
	}
	rdv.SetTimeout(time.Minute)
	tracedPipeline(t, rdv, r, n)
	if err := c.Barrier(); err != nil { // every rank is done receiving
		t.Fatal(err)
	}
	if err := rdv.Close(); err != nil {
		t.Fatal(err)
	}
}

// tracedPipeline: each rank traces its own part of a computation split
// across the ranks (a pipeline: rank r receives from r-1, computes, sends
// to r+1; then a ring exchange at every iteration of a loop whose
// iterations may overlap) and runs it from its graph; three calls, each
// equal to the same parts run eagerly on every rank.
func tracedPipeline(t *testing.T, rdv *collective.Rendezvous, r, n int) {
	next, prev := (r+1)%n, (r+n-1)%n
	fn := func(a []T) []T {
		h := a[0]
		if r > 0 {
			h = must(rdv.Recv(a[0], r-1, "stage"))
		}
		y := ops.Tanh(ops.Mul(h, tensor.Scalar(float64(r+1))))
		if r < n-1 {
			if err := rdv.Send(y, r+1, "stage"); err != nil {
				panic(err)
			}
		}
		loop := control.While(func(v []T) T { return ops.Lt(v[0], tensor.Scalar(int32(3))) },
			func(v []T) []T {
				mine := ops.Mul(a[0], ops.Cast(ops.Add(v[0], tensor.Scalar(int32(1))), tensor.Float64))
				if err := rdv.Send(mine, next, "ring"); err != nil {
					panic(err)
				}
				got := must(rdv.Recv(a[0], prev, "ring"))
				// 2·acc + got: a value taken at the wrong iteration shows.
				return []T{ops.Add(v[0], tensor.Scalar(int32(1))), ops.Add(ops.Mul(v[1], tensor.Scalar(2.0)), got)}
			}, []T{tensor.Scalar(int32(0)), ops.Sub(a[0], a[0])}, control.WhileOptions{ParallelIterations: 3})
		return []T{y, loop[1]}
	}
	f := trace.NewFunction(fn)
	for call := range 3 {
		x := tensor.RandUniform(tensor.NewRNG(uint64(10*call+r)), tensor.Float64, -1, 1, 4)
		want := fn([]T{x})
		got, err := f.Call(x)
		if err != nil {
			t.Fatalf("rank %d, call %d: %v", r, call, err)
		}
		for i := range want {
			if d := ops.Amax(ops.Abs(ops.Sub(got[i], want[i]))).Float(); d != 0 {
				t.Errorf("rank %d, call %d, result %d: traced differs from eager by %g", r, call, i, d)
			}
		}
	}
	if f.Traces() != 1 {
		t.Errorf("rank %d: %d traces", r, f.Traces())
	}
}
