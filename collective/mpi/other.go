//go:build !(linux || darwin)

// Package mpi is collective.Comm over MPI; see the Linux documentation.
// On this operating system it has no MPI to load.
package mpi

import (
	"fmt"
	"runtime"

	"github.com/eagerflow/eagerflow/collective"
)

// Comm is MPI_COMM_WORLD as a collective.Comm (Linux and macOS only).
type Comm struct{ collective.Comm }

// Open reports that MPI is not supported on this operating system.
func Open() (*Comm, error) {
	return nil, fmt.Errorf("%w: mpi: not supported on %s", collective.ErrCollective, runtime.GOOS)
}

// Transport reports that MPI is not supported on this operating system.
func (c *Comm) Transport() (collective.Transport, error) {
	return nil, fmt.Errorf("%w: mpi: not supported on %s", collective.ErrCollective, runtime.GOOS)
}

// Rendezvous reports that MPI is not supported on this operating system.
func (c *Comm) Rendezvous() (*collective.Rendezvous, error) {
	_, err := c.Transport()
	return nil, err
}
