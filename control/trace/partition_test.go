package trace_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// to moves x to dev inside a traced function.
func to(x T, dev device.Device) T {
	y, err := x.To(dev)
	if err != nil {
		panic(err)
	}
	return y
}

// partitionedAgrees traces fn on each call's arguments, cuts the graph by
// device (graph.Partition) and checks that the partitions, run at once,
// give what fn gives eagerly, call after call; it returns the partitions
// of the first call's graph.
func partitionedAgrees(t *testing.T, fn func(a []T) []T, calls ...[]T) *graph.Partitioned {
	t.Helper()
	f := trace.NewFunction(fn)
	var first *graph.Partitioned
	for i, args := range calls {
		if _, err := f.Call(args...); err != nil {
			t.Fatal(err)
		}
		p, err := graph.Partition(f.Graph(args...))
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = p
		}
		for run := range 2 { // a second run of the same partitions
			got, err := p.Execute(args...)
			if err != nil {
				t.Fatalf("call %d, run %d: %v", i, run, err)
			}
			want := fn(args)
			for j := range want {
				if d := ops.Amax(ops.Abs(ops.Sub(to(got[j], device.Host()), to(want[j], device.Host())))).Float(); d > 1e-12 {
					t.Fatalf("call %d, run %d, result %d: partitioned %v, eager %v", i, run, j, got[j], want[j])
				}
			}
		}
	}
	return first
}

// A traced function whose values move between the two CPUs cuts into a
// partition each, which run at once and give what the function gives:
// straight-line code, a conditional on the other device (its branch not
// taken dead there too), loops whose bodies alternate devices (with no
// iterations as well), and a loop nested in one whose body runs on the
// other device (driven there by a control loop of its own).
func TestPartitionedFunctions(t *testing.T) {
	other := device.SecondCPU()
	x := func(v ...float64) T { return tensor.FromSlice(v) }
	n := func(v int32) T { return tensor.Scalar(v) }
	for _, c := range []struct {
		name  string
		fn    func(a []T) []T
		calls [][]T
	}{
		{"straight line", func(a []T) []T {
			b := ops.Exp(to(ops.Tanh(a[0]), other))
			return []T{ops.Add(to(b, device.Host()), a[0]), b}
		}, [][]T{{x(1, -2)}, {x(0.5, 3)}}},
		{"a conditional on the other device", func(a []T) []T {
			b := to(a[0], other)
			c := control.Cond(ops.Gt(ops.Sum(b), tensor.FullOn(other, tensor.Float64, 0)),
				func() []T { return []T{ops.Mul(b, b)} },
				func() []T { return []T{ops.Neg(to(ops.Exp(a[0]), other))} })[0]
			return []T{ops.Add(to(c, device.Host()), a[0])}
		}, [][]T{{x(1, 2)}, {x(-1, -2)}, {x(3, -1)}}},
		{"a loop whose body alternates devices", func(a []T) []T {
			l := control.While(func(v []T) T { return ops.Lt(v[0], a[1]) }, func(v []T) []T {
				b := ops.Tanh(to(ops.Mul(v[1], tensor.Scalar(1.5)), other))
				return []T{ops.Add(v[0], n(1)), ops.Add(to(b, device.Host()), v[1])}
			}, []T{n(0), a[0]})
			return []T{l[1], l[0]}
		}, [][]T{{x(0.1, -0.3), n(3)}, {x(0.2, 0.4), n(0)}, {x(1, 2), n(5)}}},
		{"a loop carrying values on both devices", func(a []T) []T {
			l := control.While(func(v []T) T { return ops.Lt(v[0], a[1]) }, func(v []T) []T {
				far := ops.Add(v[2], to(v[1], other))
				return []T{ops.Add(v[0], n(1)), ops.Mul(v[1], tensor.Scalar(0.5)), ops.Sin(far)}
			}, []T{n(0), a[0], to(a[0], other)})
			return []T{l[1], l[2]}
		}, [][]T{{x(1, 2), n(4)}, {x(3, 1), n(0)}}},
		{"a loop in a loop, the inner body on the other device", func(a []T) []T {
			l := control.While(func(v []T) T { return ops.Lt(v[0], a[1]) }, func(v []T) []T {
				inner := control.While(func(w []T) T { return ops.Lt(w[0], v[0]) }, func(w []T) []T {
					y := to(ops.Cos(to(w[1], other)), device.Host())
					return []T{ops.Add(w[0], n(1)), ops.Add(w[1], y)}
				}, []T{n(0), v[1]})
				return []T{ops.Add(v[0], n(1)), inner[1]}
			}, []T{n(0), a[0]})
			return []T{l[1]}
		}, [][]T{{x(0.3), n(3)}, {x(-1), n(1)}}},
		{"a scan whose step runs on the other device, and its gradient", func(a []T) []T {
			tp := tape.New()
			tp.Watch(a[0])
			carry, ys := control.Scan(func(c, xs []T) ([]T, []T) {
				h := to(ops.Tanh(ops.Add(to(c[0], other), to(xs[0], other))), device.Host())
				return []T{h}, []T{ops.Mul(h, h)}
			}, []T{ops.Mul(a[0], tensor.Scalar(0.0))}, []T{ops.Reshape(a[0], -1, 1)})
			loss := ops.Add(ops.Sum(carry[0]), ops.Sum(ys[0]))
			return []T{loss, tp.Gradient(loss, a[0])[0]}
		}, [][]T{{x(0.5, -1, 2)}, {x(1, 2, 3)}}},
		{"a loop's gradient, the body on both devices", func(a []T) []T {
			tp := tape.New()
			tp.Watch(a[0])
			l := control.While(func(v []T) T { return ops.Lt(v[0], a[1]) }, func(v []T) []T {
				b := ops.Tanh(to(ops.Mul(v[1], tensor.Scalar(1.5)), other))
				return []T{ops.Add(v[0], n(1)), ops.Add(to(b, device.Host()), v[1])}
			}, []T{n(0), a[0]})
			loss := ops.Sum(ops.Square(l[1]))
			return []T{loss, tp.Gradient(loss, a[0])[0]}
		}, [][]T{{x(0.1, -0.3), n(3)}, {x(0.2, 0.4), n(0)}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := partitionedAgrees(t, c.fn, c.calls...)
			if len(p.Parts) != 2 {
				t.Errorf("%d partitions, want 2 (devices %v)", len(p.Parts), p.Devices)
			}
			for i, part := range p.Parts {
				for _, node := range part.Nodes {
					if node.Op != nil && node.Op.Name != "PartitionSend" && node.Op.Name != "PartitionRecv" && node.Op.Name != "ToDevice" {
						if d := part.Placement()[node]; d != p.Devices[i] && node.Op.Name != "Identity" {
							t.Errorf("partition %d (%s) runs %v, placed on %s", i, p.Devices[i].Name(), node, d.Name())
						}
					}
				}
			}
		})
	}
}

// A graph on one device is its own single partition.
func TestPartitionOneDevice(t *testing.T) {
	f := trace.NewFunction(func(a []T) []T { return []T{ops.Exp(a[0])} })
	x := tensor.FromSlice([]float64{1, 2})
	if _, err := f.Call(x); err != nil {
		t.Fatal(err)
	}
	p, err := graph.Partition(f.Graph(x))
	if err != nil || len(p.Parts) != 1 || p.Parts[0] != f.Graph(x) {
		t.Fatalf("%v, %v", p, err)
	}
	if _, err := graph.Partition(nil); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("nil graph: %v", err)
	}
}

// A function whose values move to other ranks' CPUs (collective.RankCPU)
// runs over the ranks of a Rendezvous (goroutines over Loopback here;
// collective/mpi's tests run it under mpirun): every rank traces it and
// runs its own partitions, the values that cross going through the
// Rendezvous; each rank's results are the eager ones, the others' nil.
// Loops spanning ranks, a conditional on another rank and a loop's
// gradient, several calls.
func TestPartitionedOverRanks(t *testing.T) {
	for _, size := range []int{2, 3} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			far := collective.RankCPU(size - 1)
			n := func(v int32) T { return tensor.Scalar(v) }
			fn := func(a []T) []T {
				tp := tape.New()
				tp.Watch(a[0])
				l := control.While(func(v []T) T { return ops.Lt(v[0], a[1]) }, func(v []T) []T {
					b := ops.Tanh(to(ops.Mul(v[1], tensor.Scalar(1.5)), collective.RankCPU(1)))
					c := to(ops.Sin(to(b, far)), device.Host())
					return []T{ops.Add(v[0], n(1)), ops.Add(c, v[1])}
				}, []T{n(0), a[0]})
				there := to(l[1], far)
				pos := control.Cond(ops.Gt(ops.Sum(there), tensor.FullOn(far, tensor.Float64, 0)),
					func() []T { return []T{ops.Mul(there, there)} },
					func() []T { return []T{ops.Neg(there)} })[0]
				loss := ops.Sum(ops.Square(l[1]))
				return []T{loss, tp.Gradient(loss, a[0])[0], pos}
			}
			calls := [][]T{{tensor.FromSlice([]float64{0.1, -0.3}), n(3)}, {tensor.FromSlice([]float64{-2, 0.4}), n(0)}, {tensor.FromSlice([]float64{1, 2}), n(2)}}
			owner := []int{0, 0, size - 1} // the rank each result is on
			results := make([][][]T, size)
			errs := make([]error, size)
			var wg sync.WaitGroup
			for r, tr := range collective.Loopback(size) {
				rdv, err := collective.NewRendezvous(tr)
				if err != nil {
					t.Fatal(err)
				}
				defer rdv.Close()
				rdv.SetTimeout(20 * time.Second)
				f := trace.NewFunction(fn)
				f.Partitions = &graph.PartitionOptions{RankOf: collective.RankOf, Rank: r, Exchange: rdv}
				wg.Go(func() {
					for _, args := range calls {
						out, err := f.Call(args...)
						if err != nil {
							errs[r] = fmt.Errorf("rank %d: %w", r, err)
							return
						}
						results[r] = append(results[r], out)
					}
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			for c, args := range calls {
				want := fn(args)
				for r := range size {
					for i, got := range results[r][c] {
						switch {
						case r != owner[i] && got != nil:
							t.Errorf("call %d, rank %d: result %d (rank %d's) is %v, want nil", c, r, i, owner[i], got)
						case r == owner[i] && got == nil:
							t.Errorf("call %d, rank %d: result %d is nil", c, r, i)
						case r == owner[i]:
							if d := ops.Amax(ops.Abs(ops.Sub(to(got, device.Host()), to(want[i], device.Host())))).Float(); d > 1e-12 {
								t.Errorf("call %d, rank %d, result %d: %v, eager %v", c, r, i, got, want[i])
							}
						}
					}
				}
			}
		})
	}
}

// A rank that never runs its partitions makes the others fail after the
// rendezvous's timeout, naming the edge, the iteration (the loop's
// iterations may overlap: any of them) and the rank they waited for, not
// hang.
func TestPartitionedRankGone(t *testing.T) {
	trs := collective.Loopback(2)
	rdv, err := collective.NewRendezvous(trs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer rdv.Close()
	rdv.SetTimeout(100 * time.Millisecond)
	f := trace.NewFunction(func(a []T) []T {
		l := control.While(func(v []T) T { return ops.Lt(v[0], a[1]) }, func(v []T) []T {
			return []T{ops.Add(v[0], tensor.Scalar(int32(1))), to(ops.Exp(to(v[1], collective.RankCPU(1))), device.Host())}
		}, []T{tensor.Scalar(int32(0)), a[0]})
		return []T{l[1]}
	})
	f.Partitions = &graph.PartitionOptions{RankOf: collective.RankOf, Rank: 0, Exchange: rdv}
	_, err = f.Call(tensor.FromSlice([]float64{0.5}), tensor.Scalar(int32(2))) // rank 1 never calls
	if !errors.Is(err, collective.ErrTimeout) || !regexp.MustCompile(`"partition/edge \d+/\d+" from rank 1`).MatchString(err.Error()) {
		t.Errorf("%v", err)
	}
}
