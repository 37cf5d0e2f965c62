//go:build linux || darwin

package mpi_test

import (
	"fmt"
	"os"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/collective/mpi"
	"github.com/eagerflow/eagerflow/tensor"
)

// A program that trains data-parallel under mpirun (or srun, or MPICH's
// mpiexec) and alone otherwise: it opens MPI only when a launcher started
// it, and every rank averages its gradient with the others'.
func Example() {
	var comm collective.Comm = collective.Single()
	if os.Getenv("OMPI_COMM_WORLD_SIZE") != "" || os.Getenv("PMI_SIZE") != "" {
		c, err := mpi.Open()
		if err != nil {
			fmt.Println(err) // no library, or the launcher's is another: the error says which
			return
		}
		defer c.Close()
		comm = c
	}
	grad := tensor.FromSlice([]float32{2, 4})
	mean, err := comm.AllReduce(grad, collective.Mean)
	if err != nil {
		fmt.Println(err)
		return
	}
	if comm.Rank() == 0 {
		fmt.Println(comm.Size() >= 1, mean.Shape())
	}
	// Output:
	// true [2]
}
