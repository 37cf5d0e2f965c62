package philox

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Known answer: the Random123 distribution's kat_vectors for
// philox4x32_10 with a zero counter and key.
func TestBlockKnownAnswer(t *testing.T) {
	if got, want := Block([2]uint32{0, 0}, 0), [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}; got != want {
		t.Errorf("Block(0, 0) = %08x, want %08x", got, want)
	}
}

// Fill gives Block's words for every block, whatever the length (partial
// blocks too), the key and where the counter starts: across a wrap of
// its low word, at its end, from odd places.
func TestFillIsBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	starts := []uint64{0, 1, 7, 1<<32 - 1, 1<<32 - 5, 1<<32 - 16, 1<<32 - 17, 1<<32 - 40, 3<<32 - 100, 1<<64 - 20}
	for range 20 {
		starts = append(starts, r.Uint64())
	}
	for _, ctr := range starts {
		for _, n := range []int{0, 1, 3, 4, 15, 16, 17, 64, 65, 127, 129, 4 * 16 * 3, 4*16*5 + 7} {
			key := [2]uint32{r.Uint32(), r.Uint32()}
			got := make([]uint32, n)
			Fill(key, ctr, got)
			want := make([]uint32, 0, n+4)
			for b := uint64(0); len(want) < n; b++ {
				w := Block(key, ctr+b)
				want = append(want, w[:]...)
			}
			if !slices.Equal(got, want[:n]) {
				t.Fatalf("Fill(%x, %#x) of %d words differs from the blocks (vector %v)", key, ctr, n, vector)
			}
		}
	}
}

func BenchmarkFill(b *testing.B) {
	out := make([]uint32, 4096)
	b.SetBytes(4 * 4096)
	for b.Loop() {
		Fill([2]uint32{1, 2}, 12345, out)
	}
}

func BenchmarkBlocks(b *testing.B) {
	out := make([]uint32, 4096)
	b.SetBytes(4 * 4096)
	for b.Loop() {
		for i := range 1024 {
			w := Block([2]uint32{1, 2}, 12345+uint64(i))
			copy(out[4*i:], w[:])
		}
	}
}
