package ops_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// badInput is one call that must fail with a typed error of kind whose
// message contains msg.
type badInput struct {
	name string
	fn   func()
	kind error
	msg  string
}

func runBadInput(t *testing.T, cases []badInput) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := tensor.Catch(c.fn)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("got %q, want kind %v containing %q", err, c.kind, c.msg)
			}
			if !strings.Contains(err.Error(), "_test.go:") {
				t.Errorf("%q does not name the caller", err)
			}
		})
	}
}

// gradCase is a function checked against finite differences at inputs in.
type gradCase struct {
	name string
	f    func(x []T) T
	in   []T
}

// runGradients checks every case in parallel; steps and tols override the
// finite-difference step and the tolerance (1e-6) by case name.
func runGradients(t *testing.T, cases []gradCase, steps, tols map[string]float64) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tol, ok := tols[c.name]
			if !ok {
				tol = 1e-6
			}
			if r := tape.CheckGradient(c.f, c.in, steps[c.name]); r.MaxError > tol {
				t.Errorf("%s", r)
			}
		})
	}
}
