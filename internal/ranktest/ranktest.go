// Package ranktest runs ranks as goroutines of one process, for tests of
// code that spans ranks: each rank over a Loopback transport with a
// Rendezvous of its own.
package ranktest

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/eagerflow/eagerflow/collective"
)

// Run runs fn(r, rdv) for every rank r < n at once, rdv rank r's
// Rendezvous (timing out after timeout), and returns the ranks' errors
// joined, each naming its rank; the rendezvous are closed after. An error
// making them returns before anything runs.
func Run(n int, timeout time.Duration, fn func(r int, rdv *collective.Rendezvous) error) error {
	rdvs := make([]*collective.Rendezvous, 0, n)
	defer func() {
		for _, rdv := range rdvs {
			rdv.Close()
		}
	}()
	for _, tr := range collective.Loopback(n) {
		rdv, err := collective.NewRendezvous(tr)
		if err != nil {
			return err
		}
		rdv.SetTimeout(timeout)
		rdvs = append(rdvs, rdv)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, rdv := range rdvs {
		wg.Go(func() {
			if err := fn(r, rdv); err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
