package nccl_test

import (
	"fmt"

	"github.com/eagerflow/eagerflow/backend/cuda"
	"github.com/eagerflow/eagerflow/backend/cuda/nccl"
	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/tensor"
)

// Gradients reduced on the GPU by NCCL: one GPU per process, the set-up
// sent over a host communicator (mpi.Open() in a job; Single alone). The
// package's tests run it on the emulated GPU and its emulated NCCL.
func ExampleOpen() {
	gpu, err := cuda.Open(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	comm, err := nccl.Open(gpu, collective.Single())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer comm.Close()
	g, _ := tensor.FromSlice([]float32{1, 2, 3}).To(gpu)
	sum, err := comm.AllReduce(g, collective.Sum)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sum.Device().Name(), sum)
	// Output:
	// gpu:0 [1. 2. 3.] float32[3]
}
