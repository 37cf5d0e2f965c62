//go:build amd64 && !purego

package cpu

// The activations' float32 vector kernels of units_amd64.s (AVX2), over
// n elements, n a multiple of 8. Their callers check haveVecKernels.

//go:noescape
func sprelu(dst, x *float32, a float32, n int)

//go:noescape
func spreluslope(dst, x *float32, a float32, n int)

//go:noescape
func sselpos(dst, x, a, b *float32, n int)

//go:noescape
func srelu6(dst, x *float32, n int)

//go:noescape
func shardsigmoid(dst, x *float32, n int)

//go:noescape
func shardswish(dst, x *float32, n int)

//go:noescape
func srelu6grad(dst, x, dy *float32, n int)

//go:noescape
func shardsigmoidgrad(dst, x, dy *float32, n int)

//go:noescape
func shardswishgrad(dst, x, dy *float32, n int)

//go:noescape
func ssoftsign(dst, x *float32, n int)
