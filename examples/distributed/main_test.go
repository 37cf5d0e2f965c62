package main

import (
	"io"
	"testing"

	"github.com/eagerflow/eagerflow/collective/mpi"
	"github.com/eagerflow/eagerflow/internal/mpitest"
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
	res, err := run(comm, 25, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.accuracy < 0.85 {
		t.Errorf("rank %d: validation accuracy %.3f after 25 epochs", comm.Rank(), res.accuracy)
	}
}
