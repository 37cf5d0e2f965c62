package mathx

import (
	"math/big"
	"testing"
)

// TwoOverPiWords are 2/π's bits: its first word as published (2/π =
// 0x0.A2F9836E4E441529...), and the whole table times π from another
// series, Euler's π = 4·(atan(1/2) + atan(1/3)), within its last bit of 2.
func TestTwoOverPiWords(t *testing.T) {
	w := TwoOverPiWords
	if w[0] != 0 || w[1] != 0xA2F9836E4E441529 {
		t.Fatalf("words 0 and 1: %#x %#x, want 0 and 0xa2f9836e4e441529", w[0], w[1])
	}
	const frac, scale = 64 * 19, 64*19 + 128
	pi := new(big.Int).Mul(big.NewInt(4), new(big.Int).Add(atanInv(2, scale), atanInv(3, scale)))
	v := new(big.Int)
	for _, word := range w[1:] {
		v.Lsh(v, 64).Or(v, new(big.Int).SetUint64(word))
	}
	// v·π/2^(frac+scale) is 2 less than π's weight in v's last bit.
	diff := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(2), frac+scale), new(big.Int).Mul(v, pi))
	if diff.Sign() < 0 || diff.Cmp(new(big.Int).Lsh(big.NewInt(4), scale)) > 0 {
		t.Errorf("2 - words·π = %v units of 2^-%d, want within [0, 4·2^%d)", diff, frac+scale, scale)
	}
}
