//go:build amd64 && !purego

package cpu

// strans16 is transpose_amd64.s's 16x16 float32 transpose (AVX-512).
//
//go:noescape
func strans16(dst *float32, ldd int, src *float32, lds int)
