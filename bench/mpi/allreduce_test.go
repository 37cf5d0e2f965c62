package mpi

import (
	"fmt"
	"os"
	"testing"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/collective/mpi"
	"github.com/eagerflow/eagerflow/internal/mpitest"
	"github.com/eagerflow/eagerflow/tensor"
)

// BenchmarkAllReduce is collective/mpi's AllReduce (sum, float32) from 1 KB
// to 64 MB; bench/mpi/run.sh runs it under mpirun beside the same loop in
// C (testdata/allreduce.c). Every rank must make the same calls, so each
// size runs a fixed number of AllReduces per benchmark iteration, as many
// as the C program (256 MB of traffic, between 5 and 2000), and reports
// ns/allreduce and GB/s; run it with -test.benchtime 1x. Outside mpirun it
// is a one-process job.
func BenchmarkAllReduce(b *testing.B) {
	benchAllReduce(b, func(comm *mpi.Comm, x *tensor.Tensor) error {
		y, err := comm.AllReduce(x, collective.Sum)
		if err == nil {
			y.Release()
		}
		return err
	})
}

// BenchmarkAllReduceInPlace is AllReduceInPlace (MPI_IN_PLACE), the call
// nn.DistributedTrainStep makes on the buffers it keeps.
func BenchmarkAllReduceInPlace(b *testing.B) {
	benchAllReduce(b, func(comm *mpi.Comm, x *tensor.Tensor) error {
		return comm.AllReduceInPlace(x, collective.Sum)
	})
}

func benchAllReduce(b *testing.B, call func(*mpi.Comm, *tensor.Tensor) error) {
	comm, err := mpi.Open()
	if err != nil {
		b.Skip(err)
	}
	for bytes := 1 << 10; bytes <= 64<<20; bytes *= 4 {
		x := tensor.RandUniform(tensor.NewRNG(1), tensor.Float32, 0, 1, bytes/4)
		iters := min(max(256<<20/bytes, 5), 2000)
		b.Run(fmt.Sprintf("%dKB", bytes>>10), func(b *testing.B) {
			if err := call(comm, x); err != nil { // warm, as the C loop
				b.Fatal(err)
			}
			calls := 0
			for b.Loop() {
				if err := comm.Barrier(); err != nil {
					b.Fatal(err)
				}
				for range iters {
					if err := call(comm, x); err != nil {
						b.Fatal(err)
					}
				}
				calls += iters
			}
			per := b.Elapsed().Seconds() / float64(calls)
			b.ReportMetric(per*1e9, "ns/allreduce")
			b.ReportMetric(float64(bytes)/per/1e9, "GB/s")
		})
	}
}

// The benchmark's rank program must at least run: one AllReduce of each
// size on 2 ranks gives the sums.
func TestAllReduceSizesUnderMPIRun(t *testing.T) { mpitest.Run(t, 2, "TestRankAllReduceSizes") }

func TestRankAllReduceSizes(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under mpirun")
	}
	comm, err := mpi.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer comm.Close()
	for bytes := 1 << 10; bytes <= 64<<20; bytes *= 16 {
		y, err := comm.AllReduce(tensor.FullOf(tensor.Float32, float64(comm.Rank()+1), bytes/4), collective.Sum)
		if err != nil {
			t.Fatal(err)
		}
		if v := tensor.ToSlice[float32](y); v[0] != 3 || v[len(v)-1] != 3 {
			t.Errorf("%d bytes: %v ... %v, want 3", bytes, v[0], v[len(v)-1])
		}
	}
}

// TestMain keeps the benchmark lines of ranks other than 0 out of the
// output (mpirun sets OMPI_COMM_WORLD_RANK) and finalises MPI after the
// benchmarks and tests, as mpirun expects of every rank.
func TestMain(m *testing.M) {
	if r := os.Getenv("OMPI_COMM_WORLD_RANK"); r != "" && r != "0" && !mpitest.Rank() {
		if null, err := os.Open(os.DevNull); err == nil {
			os.Stdout = null
		}
	}
	code := m.Run()
	if comm, err := mpi.Open(); err == nil {
		comm.Close()
	}
	os.Exit(code)
}
