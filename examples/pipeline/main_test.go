package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/collective/mpi"
	"github.com/eagerflow/eagerflow/internal/mpitest"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/tensor"
)

// The example split over 2 and 3 processes sees the losses one process
// training the whole model sees, step by step (float64, within 1e-6),
// in both schedules; its stages saved and read back into one model
// classify the validation spirals.
func TestPipelineExampleUnderMPIRun(t *testing.T) {
	for _, np := range []int{2, 3} {
		t.Run(fmt.Sprint(np), func(t *testing.T) { mpitest.Run(t, np, "TestRankPipelineExample") })
	}
}

func TestRankPipelineExample(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestPipelineExampleUnderMPIRun's mpirun")
	}
	comm, err := mpi.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer comm.Close()
	const epochs = 3
	// One process, the whole model.
	ref, opt := newModel(), newOptimizer()
	step := nn.TrainStep(ref, nn.SparseSoftmaxCrossEntropy, opt)
	var want []float64
	for e := range epochs {
		for b, err := range batches().Epoch(context.Background(), e) {
			if err != nil {
				t.Fatal(err)
			}
			l, _, err := step(b)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, l)
		}
	}
	rdv, err := comm.Rendezvous()
	if err != nil {
		t.Fatal(err)
	}
	defer rdv.Close()
	for _, sched := range []nn.PipelineSchedule{nn.GPipe, nn.OneFOneB} {
		got, err := run(rdv, newModel(), newOptimizer(), epochs, nn.PipelineOptions{MicroBatches: 4, Schedule: sched}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%v: %d steps, want %d", sched, len(got), len(want))
		}
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-6 {
				t.Fatalf("rank %d, %v, step %d: loss %.9g, one process %.9g", comm.Rank(), sched, i, got[i], want[i])
			}
		}
	}
	if err := comm.Barrier(); err != nil {
		t.Fatal(err)
	}
	// Saved by the stages into rank 0's directory (its path broadcast),
	// read back whole on rank 0.
	var name [256]uint8
	if comm.Rank() == 0 {
		copy(name[:], t.TempDir())
	}
	shared, err := comm.Broadcast(tensor.FromSlice(name[:]), 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := strings.TrimRight(string(tensor.ToSlice[uint8](shared)), "\x00")
	acc, err := train(comm, 10, nn.PipelineOptions{}, filepath.Join(dir, "spirals"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if comm.Rank() == 0 && acc < 0.8 {
		t.Errorf("validation accuracy %.3f from the stages read back", acc)
	}
	if err := comm.Barrier(); err != nil { // rank 0 is done reading before its directory goes
		t.Fatal(err)
	}
}
