package conformance

import "testing"

// The table over the CPU devices and sim:0 (sim_test.go).
func TestConformance(t *testing.T) { Run(t) }
