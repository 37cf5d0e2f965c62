//go:build linux || darwin

package mpi

import (
	"fmt"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/mpitest"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// One traced function placed on the ranks of an MPI job (its values moved
// to collective.RankCPU(r)): every process traces it and runs its own
// partitions (trace.Function.Partitions), the values that cross ranks
// going over MPI; on 2 and 3 processes each rank's results are the eager
// ones, the other ranks' nil: a loop whose body spans the ranks, its
// gradient, a conditional on the last rank, several calls.
func TestPartitionedFunctionUnderMPIRun(t *testing.T) {
	for _, np := range []int{2, 3} {
		t.Run(fmt.Sprint(np), func(t *testing.T) { mpitest.Run(t, np, "TestRankPartitionedFunction") })
	}
}

func TestRankPartitionedFunction(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestPartitionedFunctionUnderMPIRun's mpirun")
	}
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rdv, err := c.Rendezvous()
	if err != nil {
		t.Fatal(err)
	}
	defer rdv.Close()
	rdv.SetTimeout(time.Minute)
	r, size := c.Rank(), c.Size()
	far := collective.RankCPU(size - 1)
	to := func(x *tensor.Tensor, d device.Device) *tensor.Tensor {
		y, err := x.To(d)
		if err != nil {
			panic(err)
		}
		return y
	}
	n := func(v int32) *tensor.Tensor { return tensor.Scalar(v) }
	fn := func(a []*tensor.Tensor) []*tensor.Tensor {
		tp := tape.New()
		tp.Watch(a[0])
		l := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[0], a[1]) }, func(v []*tensor.Tensor) []*tensor.Tensor {
			b := ops.Tanh(to(ops.Mul(v[1], tensor.Scalar(1.5)), collective.RankCPU(1)))
			back := to(ops.Sin(to(b, far)), device.Host())
			return []*tensor.Tensor{ops.Add(v[0], n(1)), ops.Add(back, v[1])}
		}, []*tensor.Tensor{n(0), a[0]})
		there := to(l[1], far)
		pos := control.Cond(ops.Gt(ops.Sum(there), tensor.FullOn(far, tensor.Float64, 0)),
			func() []*tensor.Tensor { return []*tensor.Tensor{ops.Mul(there, there)} },
			func() []*tensor.Tensor { return []*tensor.Tensor{ops.Neg(there)} })[0]
		loss := ops.Sum(ops.Square(l[1]))
		return []*tensor.Tensor{loss, tp.Gradient(loss, a[0])[0], pos}
	}
	f := trace.NewFunction(fn)
	f.Partitions = &graph.PartitionOptions{RankOf: collective.RankOf, Rank: r, Exchange: rdv}
	owner := []int{0, 0, size - 1}
	for call, k := range []int32{3, 0, 2} {
		args := []*tensor.Tensor{tensor.FromSlice([]float64{0.1 * float64(call+1), -0.3}), n(k)}
		got, err := f.Call(args...)
		if err != nil {
			t.Fatalf("rank %d, call %d: %v", r, call, err)
		}
		want := fn(args)
		for i, g := range got {
			switch {
			case r != owner[i] && g != nil:
				t.Errorf("rank %d, call %d: result %d (rank %d's) is %v", r, call, i, owner[i], g)
			case r == owner[i] && g == nil:
				t.Errorf("rank %d, call %d: result %d is nil", r, call, i)
			case r == owner[i]:
				if d := ops.Amax(ops.Abs(ops.Sub(to(g, device.Host()), to(want[i], device.Host())))).Float(); d > 1e-12 {
					t.Errorf("rank %d, call %d, result %d: %v, eager %v", r, call, i, g, want[i])
				}
			}
		}
	}
	if err := c.Barrier(); err != nil { // every rank is done receiving
		t.Fatal(err)
	}
}
