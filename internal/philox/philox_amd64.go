//go:build amd64 && !purego

package philox

import "golang.org/x/sys/cpu"

// vector says whether fill16 runs: AVX-512 Foundation.
var vector = cpu.X86.HasAVX512F

// fill16 writes groups·16 consecutive blocks from ctr (whose low word
// does not wrap within them) at out, sixteen to a group in the lanes of
// AVX-512 registers.
//
//go:noescape
func fill16(key *[2]uint32, ctr uint64, out *uint32, groups int)
