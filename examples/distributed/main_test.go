package main

import (
	"io"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda"
	"github.com/eagerflow/eagerflow/collective/mpi"
	"github.com/eagerflow/eagerflow/internal/mpitest"
	"github.com/eagerflow/eagerflow/nn"
)

// The example learns on 2 processes: every rank reports the same
// averaged loss and a validation accuracy well above chance.
func TestDistributedLearnsUnderMPIRun(t *testing.T) { mpitest.Run(t, 2, "TestRankDistributed") }

func TestRankDistributed(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestDistributedLearnsUnderMPIRun's mpirun")
	}
	comm, err := mpi.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer comm.Close()
	res, err := run(comm, 25, io.Discard, nn.DistributedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.accuracy < 0.85 {
		t.Errorf("rank %d: validation accuracy %.3f after 25 epochs", comm.Rank(), res.accuracy)
	}
	// -traced trains the same model: the all-reduce runs in the graph.
	eager, err := run(comm, 2, io.Discard, nn.DistributedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	traced, err := run(comm, 2, io.Discard, nn.DistributedOptions{Traced: true})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(traced.loss-eager.loss) > 1e-4 || math.Abs(traced.accuracy-eager.accuracy) > 1e-9 {
		t.Errorf("rank %d: traced loss %.6f, accuracy %.4f; eager %.6f, %.4f", comm.Rank(), traced.loss, traced.accuracy, eager.loss, eager.accuracy)
	}
}

// With -gpu on emulated GPUs (NCCL emulated over MPI), 2 processes train
// the model the CPU run trains: the same losses and accuracy.
func TestDistributedOnGPUsUnderMPIRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	t.Setenv(cuda.EnvDriver, "emulator")
	mpitest.Run(t, 2, "TestRankDistributedOnGPU")
}

func TestRankDistributedOnGPU(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestDistributedOnGPUsUnderMPIRun's mpirun")
	}
	host, err := mpi.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	want, err := run(host, 2, io.Discard, nn.DistributedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	comm, err := openGPU(host)
	if err != nil {
		t.Fatal(err)
	}
	defer comm.Close()
	for _, opts := range []nn.DistributedOptions{{}, {Traced: true}} {
		got, err := run(comm, 2, io.Discard, opts)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.loss-want.loss) > 1e-4 || math.Abs(got.accuracy-want.accuracy) > 1e-9 {
			t.Errorf("rank %d, %+v: on the GPUs loss %.6f, accuracy %.4f; on the CPUs %.6f, %.4f", comm.Rank(), opts, got.loss, got.accuracy, want.loss, want.accuracy)
		}
	}
}
