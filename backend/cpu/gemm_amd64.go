//go:build amd64 && !purego

package cpu

//go:generate go run ./internal/asmgen -out gemm_amd64.s -go gemm_kernels_amd64.go

// The GEMM micro-kernels (gemm_amd64.s, listed in gemm_kernels_amd64.go,
// both generated) come in AVX-512 and AVX2+FMA builds, chosen once at
// start-up from the CPU's features (features_amd64.go).

// linkEdgeKernels sets each kernel's edge from the others of its set.
func linkEdgeKernels[T gemmElem](set []gemmKernel[T]) {
	for i := range set {
		for j := range set {
			if set[j].mr == set[i].mr && 2*set[j].nr == set[i].nr {
				set[i].edge = &set[j]
			}
		}
	}
}

// kernelSets turns the generated lists of kernels (gemm_kernels_amd64.go)
// into typed sets with their edge kernels linked.
func kernelSets[T gemmElem](sets [][]any) [][]gemmKernel[T] {
	out := make([][]gemmKernel[T], len(sets))
	for i, set := range sets {
		for _, k := range set {
			out[i] = append(out[i], k.(gemmKernel[T]))
		}
		linkEdgeKernels(out[i])
	}
	return out
}
