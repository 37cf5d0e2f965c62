// Package philox computes blocks of the Philox4x32-10 counter-based
// generator (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011), the stream of package tensor's RNG: block ctr under key
// is four 32-bit words that depend on nothing else. Fill computes many
// consecutive blocks, sixteen at a time in AVX-512 registers where the
// CPU has them (amd64), else one at a time in Go; the words are the
// same either way.
package philox

import "math/bits"

// The generator's constants: the round multipliers and the key's
// increments (Weyl sequence).
const (
	m0 = 0xD2511F53
	m1 = 0xCD9E8D57
	w0 = 0x9E3779B9
	w1 = 0xBB67AE85
)

// Block returns the four words of block ctr under key.
func Block(key [2]uint32, ctr uint64) [4]uint32 {
	c0, c1, c2, c3 := uint32(ctr), uint32(ctr>>32), uint32(0), uint32(0)
	k0, k1 := key[0], key[1]
	for range 10 {
		hi0, lo0 := bits.Mul32(m0, c0)
		hi1, lo1 := bits.Mul32(m1, c2)
		c0, c1, c2, c3 = hi1^c1^k0, lo1, hi0^c3^k1, lo0
		k0 += w0
		k1 += w1
	}
	return [4]uint32{c0, c1, c2, c3}
}

// Fill writes the words of blocks ctr, ctr+1, ... into out, block i's at
// out[4i:4i+4]; a last partial block gets its first words. Vector groups
// of sixteen blocks never cross a wrap of the counter's low word (those
// blocks are computed one at a time).
func Fill(key [2]uint32, ctr uint64, out []uint32) {
	n := len(out) / 4
	i := 0
	for vector && n-i >= 16 {
		lo := uint64(uint32(ctr + uint64(i)))
		groups := min((1<<32-lo)/16, uint64(n-i)/16)
		if groups == 0 { // the low word wraps within the next sixteen
			w := Block(key, ctr+uint64(i))
			copy(out[4*i:], w[:])
			i++
			continue
		}
		fill16(&key, ctr+uint64(i), &out[4*i], int(groups))
		i += 16 * int(groups)
	}
	for ; i < n; i++ {
		w := Block(key, ctr+uint64(i))
		copy(out[4*i:], w[:])
	}
	if r := len(out) % 4; r > 0 {
		w := Block(key, ctr+uint64(n))
		copy(out[4*n:], w[:r])
	}
}
