package ranktest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every rank runs at once (rank 0's send reaches rank 1), and a rank's
// error comes back naming it.
func TestRun(t *testing.T) {
	got := make([]float64, 2)
	err := Run(2, 5*time.Second, func(r int, rdv *collective.Rendezvous) error {
		if r == 0 {
			return rdv.Post(1, "x", tensor.Scalar(2.5), false)
		}
		x, _, err := rdv.Receive(0, "x")
		if err == nil {
			got[r] = x.Float()
		}
		return err
	})
	if err != nil || got[1] != 2.5 {
		t.Fatalf("rank 1 received %v (%v), want 2.5", got[1], err)
	}
	boom := errors.New("boom")
	err = Run(3, time.Second, func(r int, _ *collective.Rendezvous) error {
		if r == 2 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "rank 2: boom") {
		t.Errorf("got %v, want rank 2's error", err)
	}
}
