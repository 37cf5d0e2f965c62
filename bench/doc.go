// Package bench holds eagerflow's benchmarks under stable names, so results
// compare across versions:
//
//	go test ./bench -run '^$' -bench . -count 10 | tee new.txt
//	benchstat old.txt new.txt
//
// Peer libraries (gonum, Gorgonia, ...) are measured by the separate module
// in bench/peers, which keeps them out of eagerflow's go.mod. README.md in
// this directory records the figures, the machine and the date.
package bench
