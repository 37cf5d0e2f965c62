//go:build amd64 && !purego

package cpu

// strans16 is transpose_amd64.s's 16x16 float32 transpose (AVX-512).
//
//go:noescape
func strans16(dst *float32, ldd int, src *float32, lds int)

// strans12x16 packs 16 columns of a 12-row GEMM panel from A's rows (lds
// elements apart) into 192 contiguous values (AVX-512).
//
//go:noescape
func strans12x16(dst *float32, src *float32, lds int)

// spack12T packs kc columns of a 12-row GEMM panel from a transposed A:
// 12 contiguous values from each of kc rows lds elements apart (AVX-512).
//
//go:noescape
func spack12T(dst *float32, src *float32, lds int, kc int)

// dtrans12x8 packs 8 columns of a 12-row float64 GEMM panel from A's rows
// (lds elements apart) into 96 contiguous values (AVX-512).
//
//go:noescape
func dtrans12x8(dst *float64, src *float64, lds int)
