// Package cuda is the CUDA backend: the GPU device and its kernels.
package cuda

//go:generate go run ./internal/ptxgen -out ptx
