// Package layers holds the test that keeps eagerflow's import graph pointing
// down its layers (see the README's map): device, then tensor, at the bottom,
// then eager, ops, tape, control and data, then nn, then examples and bench.
package layers
