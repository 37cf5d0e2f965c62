// Package peers measures the libraries eagerflow is compared with (gonum,
// Gorgonia, GoMLX with its pure-Go backend) on the work of eagerflow's own benchmarks, under the same
// names with the peer's name in front. It is a module of its own so that
// eagerflow's go.mod stays small. torch_bench.py does the same for PyTorch
// and NumPy; ../run.sh runs everything in one go.
package peers
