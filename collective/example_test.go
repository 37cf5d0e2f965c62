package collective_test

import (
	"fmt"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/tensor"
)

// The communicator of one process: what a data-parallel program uses when
// it runs alone, so that the same code serves one process and many
// (collective/mpi.Open gives the many).
func ExampleSingle() {
	comm := collective.Single()
	grad := tensor.FromSlice([]float32{1, 2, 3})
	sum, err := comm.AllReduce(grad, collective.Mean)
	if err != nil {
		fmt.Println(err)
		return
	}
	all, _ := comm.AllGather(grad)
	fmt.Println(comm.Rank(), comm.Size(), sum, all.Shape())
	// Output:
	// 0 1 [1. 2. 3.] float32[3] [1 3]
}

// A rendezvous carries values between the ranks' graphs under keys, in any
// order, with a dead flag for a branch not taken. Here two ranks in one
// process, over Loopback.
func ExampleNewRendezvous() {
	wires := collective.Loopback(2)
	r0, _ := collective.NewRendezvous(wires[0])
	r1, _ := collective.NewRendezvous(wires[1])
	defer r0.Close()
	defer r1.Close()
	if err := r0.Post(1, "activations/step0", tensor.FromSlice([]float32{0.5, 1.5}), false); err != nil {
		fmt.Println(err)
		return
	}
	got, dead, err := r1.Receive(0, "activations/step0")
	fmt.Println(got, dead, err)
	// Output:
	// [0.5 1.5] float32[2] false <nil>
}
